/* Suite ehframe's parts (tests/test_ehframe.c, tests/ehframe_*.c): the shared
 * fixtures -- CPython's trampoline section, the small section builder (struct tb),
 * the arm64-style program, a fake register/memory context -- defined in
 * tests/test_ehframe.c; one part per stage: CFI programs (ehframe_cfi.c),
 * expressions and pointer encodings (ehframe_expr.c), malformed sections and
 * libdw's reader (ehframe_parse.c), .eh_frame_hdr (ehframe_hdr.c). */
#ifndef JU_TESTS_EHFRAME_H
#define JU_TESTS_EHFRAME_H

#include "unwinders/model/ehframe.h"
#include "unwinders/model/leb.h"
#include "trampolines/buf.h"
#include "unwinders/uwarch.h"
#include "harness/case/cfarow.h"

#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- CPython 3.12+ x86_64 trampoline, at genelf's layout ---- */

#define CPY_TEXT 0x80
#define CPY_EH 0x88   /* ALIGN_8(0x80 + 8) */

/* Python/asm_trampoline.S */
static const uint8_t cpy_code[] = {
	0x55,                   /* 0: push %rbp */
	0x48, 0x89, 0xe5,       /* 1: mov %rsp,%rbp */
	0xff, 0xd1,             /* 4: call *%rcx */
	0x5d,                   /* 6: pop %rbp */
	0xc3,                   /* 7: ret */
};

/* The CIE as Python/perf_jit_trampoline.c writes it */
#define CPY_CIE \
	0x14, 0x00, 0x00, 0x00,  /* 0x00 length 20 */ \
	0x00, 0x00, 0x00, 0x00,  /* 0x04 CIE id */ \
	0x01,                    /* 0x08 version 1 */ \
	'z', 'R', 0x00,          /* 0x09 augmentation */ \
	0x01,                    /* 0x0c code_align 1 */ \
	0x78,                    /* 0x0d data_align -8 */ \
	0x10,                    /* 0x0e RA column 16 */ \
	0x01,                    /* 0x0f augmentation data length */ \
	0x1b,                    /* 0x10 R: pcrel|sdata4 */ \
	0x0c, 0x07, 0x08,        /* 0x11 def_cfa r7+8 */ \
	0x90, 0x01,              /* 0x14 offset r16 at cfa-8 */ \
	0x00, 0x00               /* 0x16 nop; nop */

static const uint8_t cpy_eh[] = {
	CPY_CIE,
	0x1c, 0x00, 0x00, 0x00,  /* 0x18 FDE length 28 */
	0x1c, 0x00, 0x00, 0x00,  /* 0x1c CIE pointer: 0x1c - 0x1c = CIE at 0 */
	0xd8, 0xff, 0xff, 0xff,  /* 0x20 pc_begin: 0x88 + 0x20 - 0x28 = 0x80 */
	0x08, 0x00, 0x00, 0x00,  /* 0x24 pc_range 8 */
	0x00,                    /* 0x28 augmentation data length */
	0x41,                    /* 0x29 advance_loc 1 */
	0x0e, 0x10,              /* 0x2a def_cfa_offset 16 */
	0x86, 0x02,              /* 0x2c offset r6 at cfa-16 */
	0x43,                    /* 0x2e advance_loc 3 */
	0x0d, 0x06,              /* 0x2f def_cfa_register r6 */
	0x43,                    /* 0x31 advance_loc 3 */
	0x0c, 0x07, 0x08,        /* 0x32 def_cfa r7+8 */
	0x00, 0x00, 0x00,        /* 0x35 nops */
	0x00, 0x00, 0x00, 0x00,  /* 0x38 terminator */
};

static const struct ehf_bases cpy_bases = { CPY_EH, CPY_TEXT, 0, 8 };

struct rows_seen {
	uint64_t loc[16], end[16];
	uint16_t cfa_reg[16];
	int n;
};

/* ---- a small section writer for the other programs ---- */

struct tb {
	uint8_t b[1024];
	size_t n;
};

struct cie_spec {
	uint8_t version;
	const char *aug;          /* only z and R are written by tb_cie */
	uint64_t code_align;
	int64_t data_align;
	unsigned ra;
	uint8_t fde_enc;
	const uint8_t *insns;
	size_t ninsns;
};

/* ---- arm64-style program: advance_loc1/2/4, remember/restore, expressions ---- */

#define A64_TEXT 0x80
#define A64_SIZE 40
#define A64_EH 0xa8   /* ALIGN_8(0x80 + 40) */

static const uint8_t a64_cie_insns[] = {
	0x0c, 0x1f, 0x00,             /* def_cfa r31+0 */
};
static const uint8_t a64_fde_insns[] = {
	0x02, 0x01,                   /* advance_loc1 1 (x4): 4 */
	0x0e, 0x10,                   /* def_cfa_offset 16 */
	0x9d, 0x02,                   /* offset r29 at cfa-16 */
	0x9e, 0x01,                   /* offset r30 at cfa-8 */
	0x03, 0x02, 0x00,             /* advance_loc2 2: 12 */
	0x0a,                         /* remember_state */
	0x0d, 0x1d,                   /* def_cfa_register r29 */
	0x14, 0x13, 0x04,             /* val_offset r19 is cfa-32 */
	0x04, 0x03, 0x00, 0x00, 0x00, /* advance_loc4 3: 24 */
	0x0b,                         /* restore_state */
	0x2d,                         /* AARCH64_negate_ra_state */
	0x41,                         /* advance_loc 1: 28 */
	0x0f, 0x04, 0x8f, 0x10, 0x23, 0x10, /* def_cfa_expression [breg31 16; plus_uconst 16] */
	0xdd,                         /* restore r29 */
	0x41,                         /* advance_loc 1: 32 */
	0x12, 0x1f, 0x7c,             /* def_cfa_sf r31, -4 (x-8 = 32) */
	0x11, 0x13, 0x7d,             /* offset_extended_sf r19, -3 (x-8: cfa+24) */
	0x09, 0x14, 0x15,             /* register r20 in r21 */
	0x07, 0x1e,                   /* undefined r30 */
	0x08, 0x1d,                   /* same_value r29 */
	0x2e, 0x10,                   /* GNU_args_size 16 */
	0x41,                         /* advance_loc 1: 36 */
	0x10, 0x13, 0x02, 0x38, 0x1c, /* expression r19 [lit8; minus] */
	0x16, 0x14, 0x02, 0x23, 0x08, /* val_expression r20 [plus_uconst 8] */
};

static const struct cie_spec a64_cie = {
	1, "zR", 4, -8, 30, DW_EH_PE_pcrel | DW_EH_PE_sdata4, a64_cie_insns, sizeof(a64_cie_insns),
};


#define SP 31
#define REGVAL(r) (UINT64_C(0x10000) + (uint64_t)(r) * 0x100)

static inline int fake_read_reg(void *arg, unsigned r, uint64_t *v)
{
	if (r >= EHF_NREGS)
		return -1;
	*v = REGVAL(r);
	return 0;
}

static inline int fake_read_mem(void *arg, uint64_t addr, uint64_t *v)
{
	if (addr < 0x1000)
		return -1;  /* the null page faults */
	*v = addr ^ UINT64_C(0x5555);
	return 0;
}

static const struct ehf_expr_ctx fake_ctx = { fake_read_reg, fake_read_mem, NULL };

void parse_ok(struct ehf_table *t, const uint8_t *data, size_t size, const struct ehf_bases *b);
int rows_cb(const struct ehf_row *row, void *arg);
void tb_u8(struct tb *t, uint8_t v);
void tb_le(struct tb *t, uint64_t v, int n);
void tb_uleb(struct tb *t, uint64_t v);
void tb_sleb(struct tb *t, int64_t v);
void tb_raw(struct tb *t, const uint8_t *p, size_t n);
void tb_patch_len(struct tb *t, size_t len_at);
void tb_close(struct tb *t, size_t len_at);
size_t tb_cie(struct tb *t, const struct cie_spec *c);
/* FDE header with pcrel|sdata4 pointers; returns the record's offset (for tb_close). */
size_t tb_fde_open(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range, bool z);
/* A whole FDE; returns the offset of its program. */
size_t tb_fde(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range,
	      bool z, const uint8_t *insns, size_t ninsns, size_t *fde_at);
size_t build_a64(struct tb *t);
/* ehframe_cfi.c's personality/LSDA and set_loc sections, also read by libdw */
#define PLR_TEXT 0x80
#define PLR_EH 0x88
#define PLR_PERS 0x2000   /* a GOT slot holding the personality routine */
#define PLR_LSDA 0x3000
#define SL_TEXT 0x80
#define SL_EH 0xa0
size_t build_plr(struct tb *t, size_t *prog_at);   /* ehframe_cfi.c */
size_t build_setloc(struct tb *t);                 /* ehframe_cfi.c */

/* each part adds its tests to one of the suite's tcases */
void ehframe_add_cfi(TCase *interpreter);
void ehframe_add_expr(TCase *expressions);
void ehframe_add_malformed(TCase *malformed);
void ehframe_add_libdw(TCase *libdw);
void ehframe_add_hdr(TCase *eh_frame_hdr);
void ehframe_add_hdr_cpython(TCase *cpython);

#endif
