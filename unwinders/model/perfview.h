/* perf's view of the process (facts section 2): every CODE_LOAD becomes a
 * jitted-<pid>-<index>.so laid out as `perf inject -j` (genelf) lays it,
 * mapped by the MMAP2 perf injects; file-backed maps stay as they are.
 * libunwind and libdw are fed from this view only, as perf feeds them. */
#ifndef UW_PERFVIEW_H
#define UW_PERFVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "unwinders/model/jitdump.h"
#include "juerr.h"

enum pv_profile {
	PV_CURRENT,     /* upstream >= 6.8 and stable trees with its fixes (Debian 12's 6.1.192) */
	PV_V61,         /* v6.1-v6.7 without backports: PT_LOAD at 0, libunwind base without -pgoff,
			   libdw without the /tmp/jitted- rule */
	PV_5X_0X40,     /* 5.x stable trees: .text at 0x80 but MMAP2 pgoff 0x40 */
	PV_510,         /* Debian 11's perf 5.10.223 (checked against it): .text sh_addr 0x40 at
			   file offset 0x80, PT_LOAD at 0x40/0x40, MMAP2 pgoff 0x40; libunwind's
			   segbase from .eh_frame_hdr's file offset; libdw base start - pgoff */
	PV_V612,        /* v6.5 up to perf's ELF-machine register rework (Debian 13's 6.12.117,
			   checked on the arch it names wrong; sid's 7.2.13 has the rework):
			   current's layout, but registers found by the arch's name
			   (perf_arch_reg_sp(perf_env__arch())), which knows no name of some arches
			   (uw_arch.perf_name_unknown): the stack dump is read from register 0 */
};
/* every profile's name, in the table's order, for the options' help texts
 * (static initializers); a unit test holds it to the table (test_perfview.c) */
#define PV_PROFILE_LIST "current, v6.1, 5.x-0x40, 5.10.y, v6.12"
/* whether the profile finds perf registers by the arch's name (PV_V612) */
bool pv_regs_by_name(enum pv_profile p);

/* What a perf generation remembers of a process across samples: the one
 * place its lifetimes are kept (measured with tools/jit-reuse.c under each
 * generation, docs/perf-remembers.md).  The replay of a recording keeps
 * the emulations' state so; a case's generations are one process to it. */
struct pv_memory {
	const char *gens;             /* the perf versions it stands for */
	int from_major;               /* this row holds from this perf major on (the next row's ends it) */
	/* libunwind: one address space per process, UNW_CACHE_GLOBAL, flushed only
	 * at an exec (unwind-libunwind-local.c, thread.c __thread__set_comm) */
	bool lu_per_process;
	/* libdw: one Dwfl per process, dropped only by maps__remove (perf >= 7,
	 * unwind-libdw.c libdw__invalidate_dwfl); else one per sample */
	bool dw_per_process;
	const char *measured;         /* what tools/jit-reuse.c showed under it */
};
/* the row of perf major version `major` (0 or unknown: the newest) */
const struct pv_memory *pv_memory_of(int major);
const char *pv_profile_name(enum pv_profile p);
/* "current, v6.1, 5.x-0x40 or 5.10.y": every profile, for messages */
const char *pv_profile_choices(void);
/* 0, or -EINVAL for a name that is no profile */
int pv_profile_parse(const char *s, enum pv_profile *p);

struct pv_sym {               /* one symbol of a DSO, as perf keeps it */
	uint64_t start, end;          /* file offsets: st_value - (p_vaddr - p_offset) */
	const char *name;             /* points into the DSO's image */
};

struct pv_dso {
	char path[4096];          /* jitted-<pid>-<index>.so, or the mapped file */
	bool jitted;
	const struct jd_load *load;   /* jitted: the CODE_LOAD it was made from */
	const uint8_t *image;     /* the whole file: a mapped file's is shared for the run
				   (files.h, held by `file`); a jitted one's is read in, owned */
	size_t size;
	const struct uw_file *file;
	/* from the ELF's section headers (by name, as perf finds them) */
	bool has_eh_frame_hdr;
	uint64_t eh_frame_hdr_addr, eh_frame_hdr_off, eh_frame_hdr_size;
	bool has_eh_frame;
	uint64_t eh_frame_addr, eh_frame_off, eh_frame_size;
	uint64_t first_load_vaddr;    /* p_vaddr of the first PT_LOAD */
	uint64_t first_load_offset;   /* its p_offset */
	/* added: symbols as perf loads them (file-relative, see pv_symbolize) */
	bool is_elf;
	bool has_first_load;
	struct pv_sym *syms;          /* sorted by start, duplicates removed */
	size_t nsyms;
	bool syms_shared;             /* syms belong to the file's cache entry, not to this DSO */
	/* the name perf gives this DSO (its long_name, owned): for a jitted one the
	 * dump's own directory + /jitted-<pid>-<index>.so, because perf inject
	 * writes next to the dump, wherever `path` was written; else `path`.
	 * Path-keyed perf rules (libdw's "/tmp/jitted-" prefix) apply to this. */
	char *perf_name;
};

struct pv_map {               /* one entry of perf's map tree for the pid */
	uint64_t start, end, pgoff;
	/* NULL: a map perf has whose DSO holds no data it can read or report
	 * ([stack], [heap]): a read there comes back short, a frame there has
	 * no module (unlike an address no map covers) */
	struct pv_dso *dso;
};

struct pv_view {
	enum pv_profile profile;
	char dir[4096];           /* where the jitted .so files were written ("" if none) */
	bool private_dir;         /* remove dir on pv_fini */
	struct pv_dso *dsos;
	size_t ndsos;
	struct pv_map *maps;      /* sorted by start, non-overlapping (later maps cut earlier ones) */
	size_t nmaps;
};

/* one map of the process (its /proc/PID/maps line, or perf's MMAP2 record):
 * what perf's view starts from; the unwinders' process view (view.h) holds them too */
struct uw_map {
	uint64_t start, end, pgoff;
	char prot[5];
	char *path;
};
struct uw_file; /* files.h */

/* Build perf's view from the process maps and the jitdump (jd may be NULL).
 * outdir: where to write the jitted .so files (NULL: a private temp dir).
 * 0, or a negative errno with a message naming the jitdump offset at fault
 * (-EINVAL a load perf cannot place, -ERANGE too many maps or too large a
 * load, -ENOMEM, -EIO libelf, a system call's errno). */
int pv_build(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
	     const struct jd_file *jd, const char *outdir, struct ju_err *err);
/* The same, with perf taking the jitdump to live in dump_dir (perf names the
 * jitted .so files after it, and its libdw path keys on /tmp/jitted-):
 * CPython writes /tmp/jit-<pid>.dump wherever a harness keeps the file. */
int pv_build_at(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
		const struct jd_file *jd, const char *outdir, const char *dump_dir,
		struct ju_err *err);
void pv_fini(struct pv_view *pv);

const struct pv_map *pv_find(const struct pv_view *pv, uint64_t addr);
/* perf's map_ip: file offset of addr = addr - start + pgoff; read n bytes from
 * the DSO file there (dso__data_read_addr). true if all n bytes exist. */
bool pv_read(const struct pv_view *pv, uint64_t addr, void *buf, size_t n);
/* The symbol perf prints for addr through its view (the jitted ELF's symtab,
 * or the mapped ELF's .symtab/.dynsym), or NULL where perf prints [unknown]. */
const char *pv_symbolize(const struct pv_view *pv, uint64_t addr);

/* GEN_ELF_TEXT_OFFSET as that perf generation defined it: .text sh_addr,
 * the symbol's value, e_entry and the injected MMAP2 pgoff (0x40 for 5.x-0x40:
 * its .text still sits at file offset 0x80). */
uint64_t pv_text_addr(enum pv_profile p);
/* p_offset = p_vaddr of the jitted ELF's PT_LOAD under p (0x80, or 0). */
uint64_t pv_load_vaddr(enum pv_profile p);
/* DIR/jitted-<pid>-<code_index>.so as perf names it.  0, or -ENAMETOOLONG. */
int pv_jitted_path(char *buf, size_t len, const char *dir, const struct jd_load *l);

/* The sizes of the UNWINDING_INFO perf attaches to a load. */
struct pv_unwind_sizes {
	uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
};

/* perf's layout of one load under a profile: the jitted ELF genelf writes and
 * the MMAP2 perf injects for it.  The one place these numbers are computed:
 * the ELF writer, the process view, lint and dump all read them here. */
struct pv_layout {
	/* the jitted ELF: section addresses, and where libelf lays them out */
	uint64_t text_addr, text_size, text_off;
	bool has_unwind;
	uint64_t eh_addr, eh_size, eh_off, hdr_addr, hdr_size, hdr_off;
	uint64_t load_offset, load_vaddr, load_size;   /* the one PT_LOAD */
	/* PERF_RECORD_MMAP2 */
	uint64_t map_start, map_len, map_pgoff;
	/* their addresses in the process as perf's DWARF unwinders see the ELF
	 * (base = map start - pgoff): what pcrel/datarel values resolve against */
	uint64_t rt_text, rt_eh, rt_hdr;
	/* the base perf hands libunwind (read_unwind_spec_eh_frame: start - pgoff,
	 * v6.1-v6.7 start alone, less the PT_LOAD's page) and the module start it
	 * reports to libdw (at map start when the .so is named /tmp/jitted-*,
	 * except v6.1-v6.7; else start - pgoff) */
	uint64_t lu_base, dw_base_tmp, dw_base_other;
};
/* u NULL: no UNWINDING_INFO.  An eh_frame_hdr_size above unwinding_size is
 * taken as 0 (lint reports it; the writer refuses it). */
void pv_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
	       const struct pv_unwind_sizes *u, struct pv_layout *out);
/* The same for a load of the strict reader. */
void pv_layout_load(enum pv_profile prof, const struct jd_load *l, struct pv_layout *out);

/* The MMAP2 perf inject writes for a CODE_MOVE under prof (jit_repipe_code_move):
 * start new_code_addr, pgoff the text offset, len ALIGN_8(code_size) + the
 * pending UNWINDING_INFO's mapped_size, else code_size.  The one place these
 * are computed: the view, the process view and the replay's map tree read them. */
void pv_layout_move(enum pv_profile prof, const struct jd_move *m, uint64_t *start, uint64_t *len, uint64_t *pgoff);

/* Write one jitted ELF exactly as `perf inject -j` would under prof. */
int pv_write_jitted_elf(const char *path, enum pv_profile prof, const struct jd_load *l,
			uint16_t elf_mach, struct ju_err *err);

#endif
