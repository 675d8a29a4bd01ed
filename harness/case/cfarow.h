/* The emitted CFI's row at a pc, as text for the reports. */
#ifndef HX_CFAROW_H
#define HX_CFAROW_H

#include <stddef.h>
#include <stdint.h>
#include "unwinders/view.h"
#include "harness/case/case.h"

/* A row as text (ehf_row_text) in a report's style, registers by perf's names:
 * REPORT "CFA=sp+16 bp=[CFA-16] ra=[CFA-8]" (run's sample details),
 * REPLAY "cfa=bp+16 bp=[cfa-16] ip=[cfa-8]" (replay's per-pc rows). */
enum hx_row_style { HX_ROW_REPORT, HX_ROW_REPLAY };
void hx_row_text(const struct uw_arch *a, const struct ehf_row *row, enum hx_row_style st, char *buf, size_t n);

/* The emitted CFI's row at pc in the REPORT style, or why there is none */
void hx_cfa_row_text(const struct uw_view *v, uint64_t pc, char *buf, size_t n);

/* DWARF register dw by perf's name ("bp", "sp", "ra" for the return address column) */
const char *hx_dw_reg_name(const struct uw_arch *a, unsigned dw, char *tmp, size_t n);

/* the generator's truth row (tr_emit of the case's ops) at offset of the function named by
 * where ("leaf+0x3": the [leaf] ops), printed as hx_cfa_row_text prints; "-" in C code */
void hx_true_row_text(const struct hx_case *c, const char *where, int offset, const struct uw_arch *ua,
		      char *buf, size_t n);
/* "emitted only: bp=[CFA-16]; true only: ...", or "" when the rows agree or no true row */
void hx_row_diff_text(const char *emitted, const char *truth, char *buf, size_t n);

/* DWARF register numbers in a message ("r6") followed by perf's name ("r6 (bp)") */
void hx_term_regnames(const struct uw_arch *a, const char *in, char *out, size_t n);

#endif
