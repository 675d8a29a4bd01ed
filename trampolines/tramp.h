/* The JIT side: turn ops into code + truth rows, encode unwinding info,
 * install in a W^X arena, write the jitdump. Never includes unwinders/. */
#ifndef TR_TRAMP_H
#define TR_TRAMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "trampolines/arch.h"
#include "juerr.h"

#define TR_MAX_CODE 8192
#define TR_MAX_INSNS 256
#define TR_MAX_PROG 1024

struct tr_func {
	const struct tr_arch *arch;
	uint8_t code[TR_MAX_CODE];
	size_t code_size;
	struct tr_row rows[TR_MAX_INSNS]; /* one per instruction, by offset */
	size_t nrows;
	int64_t ret_off;      /* offset of the return address after call_target, -1 if none */
	/* call_target rel32: the offset of its 4-byte displacement, which whoever
	 * places the code sets (the capture: to a jmp to the target), -1 if none */
	int64_t rel32_off;
	/* .cfi_* directives found among the ops, with the offset they apply at */
	struct { uint32_t offset; char text[TR_CFI_TEXT_MAX]; int line; } cfi[TR_MAX_INSNS];
	size_t ncfi;
};

/* Encode ops and derive the truth rows.  0, or -errno with err filled (juerr.h). */
int tr_emit(const struct tr_arch *arch, const struct tr_op *ops, size_t nops,
	    struct tr_func *out, struct ju_err *err);

/* Unwinding-info options (the [unwind] section of a case). Encodings are
 * DW_EH_PE_* values. */
enum tr_cfi_src { TR_CFI_DERIVED, TR_CFI_BYTES, TR_CFI_DIRECTIVES, TR_CFI_NONE };
enum tr_hdr_place { TR_HDR_AFTER, TR_HDR_BEFORE, TR_HDR_NONE };

struct tr_unwind_opts {
	enum tr_cfi_src cfi;
	uint8_t prog[TR_MAX_PROG];   /* TR_CFI_BYTES: the FDE's CFA program */
	size_t prog_len;
	char cie_aug[8];             /* "zR" (default), "zPLR", "zLR", "zRS", "" */
	int cie_version;             /* 1 (default) or 3 */
	uint8_t fde_enc;             /* default DW_EH_PE_pcrel|DW_EH_PE_sdata4 */
	enum tr_hdr_place hdr;       /* default after */
	uint8_t table_enc;           /* default DW_EH_PE_datarel|DW_EH_PE_sdata4 */
	bool hdr_table;              /* false: fde_count/table omitted (DW_EH_PE_omit) */
	bool terminator;             /* 4-byte zero after the FDE (V8) */
	bool eh_unaligned;           /* encode eh_frame as if at code+csize, not ALIGN_8 */
	long long mapped;            /* -1 auto, else the mapped_size written */
	uint8_t lsda_enc;            /* with 'L': DW_EH_PE_omit (default, as V8) or an encoding
				      * whose size of zero bytes every FDE then carries */
};

void tr_unwind_opts_default(struct tr_unwind_opts *o);

/* The unwinding data as it is laid in memory and in the jitdump. */
struct tr_unwind {
	uint8_t data[4096];          /* eh_frame then header (or header first for TR_HDR_BEFORE) */
	size_t size;                 /* unwinding_size */
	size_t eh_frame_size;
	size_t hdr_size;             /* eh_frame_hdr_size */
	uint64_t mapped_size;
	size_t eh_off;               /* offset of .eh_frame from the start of the code */
};

/* Build .eh_frame/.eh_frame_hdr for f placed at code_addr, its data at
 * code_addr + u->eh_off (ALIGN_8(code_size) unless eh_unaligned).  0, or -errno with err filled (juerr.h). */
int tr_unwind_build(const struct tr_func *f, const struct tr_unwind_opts *o,
		    uint64_t code_addr, struct tr_unwind *u, struct ju_err *err);

/* Compile .cfi_* directives found among the ops (f->cfi) into an FDE CFA program. */
int tr_cfi_compile(const struct tr_func *f, uint8_t *prog, size_t cap, size_t *len,
		   struct ju_err *err);
/* The CIE's initial instructions: the arch's entry state (x86_64: def_cfa r7+8,
 * r16 at cfa-8; aarch64: def_cfa r31+0).  0 or -ENOSPC. */
int tr_cfi_cie_init(const struct tr_arch *a, uint8_t *buf, size_t cap, size_t *len);
/* An FDE program derived from f's truth rows: at each row whose state differs
 * from the previous one, the smallest advance, then def_cfa / def_cfa_register /
 * def_cfa_offset, then offset / restore per changed column.  0, or -errno with err filled (juerr.h). */
int tr_cfi_derive(const struct tr_func *f, uint8_t *prog, size_t cap, size_t *len,
		  struct ju_err *err);

/* Executable arena, W^X. Every change of bytes after tr_arena_init, including
 * installing code, goes through tr_patch. */
struct tr_arena {
	uint8_t *base;
	size_t size;
	size_t used;
	size_t page;
	bool direct;      /* tr_arena_direct: patches written through mem_fd */
	int mem_fd;       /* this process's /proc/self/mem while direct */
};
int tr_arena_init(struct tr_arena *a, size_t size);     /* mmap, PROT_READ|PROT_EXEC */
/* Patches from now on written through /proc/self/mem, the way a debugger
 * plants breakpoints: the pages stay r-x (never writable in the page tables)
 * and a patch is one pwrite instead of two mprotects, each of which splits
 * and re-merges the mapping and flushes the TLB (~50 us a pair on a VM, against
 * ~2 us).  Call it in the process that runs the code: the file is that
 * process's memory.  0, or -errno when the kernel refuses forced writes
 * (proc_mem.force_override=never, no /proc): tr_patch then stays on
 * mprotect, as it also falls back if a later write fails.  Not for code an
 * emulator runs (qemu-user notices self-modifying code only through page
 * protections). */
int tr_arena_direct(struct tr_arena *a);
/* The same at exactly `at` (page-aligned), never over an existing mapping:
 * -EEXIST if anything is mapped there. */
int tr_arena_init_at(struct tr_arena *a, size_t size, uintptr_t at);
int tr_arena_alloc(struct tr_arena *a, size_t size, size_t align, uint8_t **out);
int tr_patch(struct tr_arena *a, void *dst, const void *src, size_t n); /* -errno on failure */
void tr_arena_fini(struct tr_arena *a);

/* jitdump writer (facts section 1). */
struct jdw {
	int fd;
	void *marker;
	size_t marker_len;
	uint32_t pid;
	uint64_t next_index;
	char path[4096];
	char dir[4096];
	int map_fd;                  /* perf-<pid>.map in the same directory */
};
int jdw_open(struct jdw *w, const char *dir, uint16_t elf_mach);
int jdw_unwinding_info(struct jdw *w, const uint8_t *data, uint64_t unwinding_size,
		       uint64_t eh_frame_hdr_size, uint64_t mapped_size);
int jdw_code_load(struct jdw *w, const char *name, uint64_t code_addr,
		  const uint8_t *code, uint64_t size, uint64_t *index_out);
/* JIT_CODE_MOVE of the load code_index: its code now at new_addr. */
int jdw_code_move(struct jdw *w, uint64_t old_addr, uint64_t new_addr, uint64_t size, uint64_t index);
/* Unmap the marker (perf saw its mmap) and keep writing records: a JIT
 * whose code lives on after the maps are read. */
int jdw_unmap_marker(struct jdw *w);
int jdw_close(struct jdw *w);
uint64_t jdw_timestamp(void);  /* CLOCK_MONOTONIC ns */

#endif
