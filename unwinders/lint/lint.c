/* jitdump linter, the rule walk: perf's reading of a dump
 * (tools/perf/util/jitdump.c, genelf.c, unwind-libunwind-local.c; facts
 * sections 1, 2, 7), the rule table, and the observers of the one jitdump
 * walk (jdwalk.c) that check each record as perf would take it. */
#include "unwinders/lint/lint_int.h"

#include <ctype.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwinders/decode.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/uwarch.h"


const struct lint_rule lint_rules[LR__COUNT] = {
	[LR_NOT_JITDUMP] = { "JD001", "not-a-jitdump", LINT_ERROR,
		"perf inject -j cannot open it as a jitdump and injects nothing for this process." },
	[LR_VERSION] = { "JD002", "version", LINT_ERROR,
		"perf rejects a dump whose version is above 1 and injects nothing for this process." },
	[LR_HEADER_SIZE] = { "JD003", "header-size", LINT_ERROR,
		"perf reads records from offset 40 whatever total_size says, and rejects the dump when total_size is above 80." },
	[LR_HEADER_FLAGS] = { "JD004", "header-flags", LINT_ERROR,
		"perf rejects a dump with any flag bit but ARCH_TIMESTAMP and injects nothing." },
	[LR_ARCH_TIMESTAMP] = { "JD005", "arch-timestamp", LINT_WARNING,
		"perf converts these stamps with the recording's TSC conversion and rejects the dump when the recording has none." },
	[LR_ELF_MACH] = { "JD006", "elf-mach", LINT_INFO,
		"perf ignores elf_mach (genelf writes its own machine), but other readers pick the architecture from it." },
	[LR_FILE_NAME] = { "JD007", "file-name", LINT_INFO,
		"perf inject -j only opens a dump whose mmapped file is named jit-<pid>.dump, pid being the process that mapped it." },
	[LR_RECORD_TRUNCATED] = { "JD010", "record-truncated", LINT_ERROR,
		"perf stops reading at a record that runs past the end of the file: it and everything after it are lost." },
	[LR_RECORD_SIZE] = { "JD011", "record-size", LINT_ERROR,
		"perf stops reading at a total_size below 16, and takes fields a short record lacks from the bytes of an earlier record." },
	[LR_RECORD_UNKNOWN] = { "JD012", "record-unknown", LINT_WARNING,
		"perf skips a record whose id is above 4, with a warning." },
	[LR_AFTER_CLOSE] = { "JD014", "after-close", LINT_INFO,
		"perf ignores CODE_CLOSE and keeps reading the records after it." },
	[LR_TIMESTAMP_BACKWARDS] = { "JD015", "timestamp-backwards", LINT_WARNING,
		"perf injects each MMAP2 at its record's timestamp, so records out of time order change which mapping a sample is resolved against." },
	[LR_RECORD_PID] = { "JD016", "record-pid", LINT_WARNING,
		"perf injects the MMAP2 and names the .so with the record's pid, so samples of the dump's process never resolve to this code." },
	[LR_LOAD_NAME] = { "JD020", "load-name", LINT_ERROR,
		"perf reads the name with strlen from offset 56 and runs past the record when it is not NUL-terminated inside it." },
	[LR_LOAD_CODE_SIZE] = { "JD021", "load-code-size", LINT_ERROR,
		"perf takes the code as the record's last code_size bytes (code_size held in an int), so a size that does not fit after the name gives it the name or header bytes as code." },
	[LR_LOAD_TRAILING] = { "JD022", "load-trailing-bytes", LINT_ERROR,
		"perf takes the code as the record's last code_size bytes, so padding written after the code shifts perf's copy: it starts inside the real code and ends with the padding." },
	[LR_LOAD_EMPTY] = { "JD023", "load-empty", LINT_WARNING,
		"perf maps a zero-length DSO that no sample can hit." },
	[LR_LOAD_VMA] = { "JD024", "load-vma", LINT_INFO,
		"perf maps code_addr and ignores vma." },
	[LR_DUPLICATE_INDEX] = { "JD026", "duplicate-index", LINT_ERROR,
		"perf writes both loads to jitted-<pid>-<code_index>.so: the later file replaces the earlier, whose samples then resolve against the wrong code and symbol." },
	[LR_ADDR_WRAP] = { "JD027", "addr-wrap", LINT_ERROR,
		"perf's mapping for this load wraps around the address space and cannot be placed in its map tree." },
	[LR_UNWIND_AFTER_LOAD] = { "JD030", "unwind-after-load", LINT_ERROR,
		"perf attaches unwinding info to the NEXT CODE_LOAD, so info written after its load is lost for it (and given to whatever load follows)." },
	[LR_UNWIND_NO_LOAD] = { "JD031", "unwind-no-load", LINT_ERROR,
		"perf keeps unwinding info until a CODE_LOAD follows; none does, so nothing uses it." },
	[LR_UNWIND_OVERWRITTEN] = { "JD032", "unwind-overwritten", LINT_WARNING,
		"perf replaces pending unwinding info with the next UNWINDING_INFO record: the earlier one is never used." },
	[LR_UNWIND_SIZE] = { "JD033", "unwind-size", LINT_ERROR,
		"perf copies total_size - 40 bytes but hands genelf unwinding_size and eh_frame_hdr_size as written, so genelf reads past its copy or computes a negative .eh_frame size." },
	[LR_HDR_SIZE_ZERO] = { "JD034", "hdr-size-zero", LINT_ERROR,
		"with eh_frame_hdr_size 0 perf writes an empty .eh_frame_hdr, so its libunwind path finds no FDE, and it keeps this info for every later CODE_LOAD." },
	[LR_HDR_FIRST] = { "JD035", "hdr-first", LINT_ERROR,
		"perf takes .eh_frame as the FIRST unwinding_size - eh_frame_hdr_size bytes and .eh_frame_hdr as the rest, so header-first data (LLVM ORC's order; LLVM 19 with an absolute eh_frame_ptr and no table) is misparsed: the jitted .so's .eh_frame starts with the header's bytes and parses as no record, and the unwinding info is lost." },
	[LR_HDR_SIZE_MISMATCH] = { "JD036", "hdr-size-mismatch", LINT_ERROR,
		"perf splits the data at unwinding_size - eh_frame_hdr_size, so a wrong eh_frame_hdr_size cuts .eh_frame short or starts .eh_frame_hdr inside it." },
	[LR_EH_FRAME_PARSE] = { "JD037", "eh-frame-parse", LINT_ERROR,
		"perf's DWARF unwinders cannot use this .eh_frame and find no unwinding info for the code it should describe." },
	[LR_NO_TERMINATOR] = { "JD038", "no-terminator", LINT_INFO,
		"perf's unwinders use the section size and need no zero terminator; readers that walk .eh_frame alone (libgcc) stop only at one." },
	[LR_TERMINATOR_MISPLACED] = { "JD039", "terminator-misplaced", LINT_ERROR,
		"readers stop at the first zero length, so the records after it are never seen." },
	[LR_HDR_PARSE] = { "JD040", "hdr-parse", LINT_ERROR,
		"perf's libunwind path reads its search table from .eh_frame_hdr and finds no FDE when the header does not parse." },
	[LR_HDR_ENCODING] = { "JD041", "hdr-encoding", LINT_ERROR,
		"perf decodes eh_frame_ptr and fde_count itself (absolute or pcrel, 4 or 8 bytes) and hands libunwind the table as datarel|sdata4 pairs, so other encodings misread the count or the table." },
	[LR_HDR_NO_TABLE] = { "JD042", "hdr-no-table", LINT_WARNING,
		"perf hands libunwind a table of fde_count entries, 0 here, so its libunwind path finds no FDE; only libdw, which scans .eh_frame, unwinds this code." },
	[LR_HDR_TABLE] = { "JD043", "hdr-table", LINT_ERROR,
		"libunwind binary-searches this table as perf hands it over, so an entry that does not match its FDE finds the wrong FDE or none." },
	[LR_HDR_EH_FRAME_PTR] = { "JD044", "hdr-eh-frame-ptr", LINT_WARNING,
		"perf skips eh_frame_ptr, but readers that follow it (libgcc, libdw without section headers) look for .eh_frame at the wrong address." },
	[LR_FDE_COVERAGE] = { "JD045", "fde-coverage", LINT_ERROR,
		"perf resolves FDE addresses in its genelf layout (.eh_frame at ALIGN_8(0x80 + code_size)); an FDE that straddles the code's bounds there gives samples another instruction's rows, and none to the pcs left out." },
	[LR_FDE_GAP] = { "JD046", "fde-gap", LINT_INFO,
		"samples at pcs no FDE covers get no DWARF unwinding: perf falls back to frame pointers or stops there." },
	[LR_FDE_OUTSIDE] = { "JD047", "fde-outside", LINT_WARNING,
		"this FDE describes addresses outside the load's code in perf's layout, which belong to other mappings or to the unwinding data itself." },
	[LR_NO_FDE] = { "JD048", "no-fde", LINT_INFO,
		"perf's DWARF unwinders find no FDE for this code and fall back to frame pointers or stop." },
	[LR_MAPPED_ZERO] = { "JD049", "mapped-size-zero", LINT_ERROR,
		"with mapped_size 0 perf's mapping ends with the code, the unwinding data lies outside it, and DWARF unwinders silently fall back to frame pointers." },
	[LR_MAPPED_SMALL] = { "JD050", "mapped-size-small", LINT_ERROR,
		"perf maps ALIGN_8(code_size) + mapped_size bytes, so the unwinding data past that end cannot be read and lookups in it fail." },
	[LR_MAPPING_OVERLAP] = { "JD051", "mapping-overlap", LINT_ERROR,
		"perf's map tree cuts an earlier mapping where a later one starts: the earlier load loses its unwinding data, or its code is resolved against the later load's DSO." },
	[LR_CFA_VS_CODE] = { "JD052", "cfa-vs-code", LINT_ERROR,
		"perf's DWARF unwinders compute the CFA from these rows and read the return address from the wrong stack slot." },
	[LR_RA_RULE] = { "JD053", "ra-rule", LINT_WARNING,
		"perf's DWARF unwinders take the caller's pc from this rule: on x86_64 anything but the slot at CFA-8 ends or corrupts the chain." },
	[LR_FDE_ABSOLUTE] = { "JD054", "fde-absolute", LINT_WARNING,
		"perf feeds libunwind process addresses but hands libdw the jitted ELF's own (.text at 0x80), so an absolute FDE address matches only one of them and the other unwinder finds no FDE." },
	[LR_UNWIND_EMPTY] = { "JD056", "unwind-empty", LINT_INFO,
		"perf writes an empty .eh_frame for this load, so DWARF unwinding of it falls back to frame pointers." },
	[LR_MOVE_UNKNOWN] = { "JD060", "move-unknown", LINT_ERROR,
		"perf maps jitted-<pid>-<code_index>.so at the new address, and no earlier CODE_LOAD wrote that file." },
	[LR_MOVE_MISMATCH] = { "JD061", "move-mismatch", LINT_WARNING,
		"perf maps the moved .so by code_index alone, so an old_code_addr that is not that load's suggests the wrong index." },
	[LR_DEBUG_AFTER_LOAD] = { "JD070", "debug-after-load", LINT_ERROR,
		"perf gives DEBUG_INFO to the NEXT CODE_LOAD, so line info written after its load lands on another load or nowhere." },
	[LR_DEBUG_NO_LOAD] = { "JD071", "debug-no-load", LINT_WARNING,
		"perf keeps DEBUG_INFO for the next CODE_LOAD; none follows, so it is never used." },
	[LR_DEBUG_MISMATCH] = { "JD072", "debug-mismatch", LINT_WARNING,
		"perf gives DEBUG_INFO to the next CODE_LOAD whatever its code_addr says." },
	[LR_DEBUG_ENTRIES] = { "JD073", "debug-entries", LINT_ERROR,
		"perf trusts nr_entry and genelf walks that many entries, reading past the record when they do not fit in it." },
	[LR_DEBUG_OVERWRITTEN] = { "JD074", "debug-overwritten", LINT_WARNING,
		"perf replaces pending DEBUG_INFO with the next DEBUG_INFO record: the earlier one is never used." },
	[LR_DEBUG_RANGE] = { "JD075", "debug-range", LINT_INFO,
		"line entries outside the load's code describe no instruction of perf's jitted .so." },
	[LR_PERF_PROFILE] = { "JD090", "perf-profile", LINT_WARNING,
		"this perf generation mishandles every jitted DSO in the way the message says, whatever the dump contains." },
	[LR_LIMIT] = { "JD099", "lint-limit", LINT_INFO,
		"not perf's doing: lint's bounded history forgot its oldest entries, so checks between records far apart may miss a pair." },
	[LR_REG_BELOW_SP] = { "JD057", "reg-below-sp", LINT_ERROR,
		"perf copies the user stack from SP upwards, so a register rule that points at a slot below SP reads outside the copy and the DWARF unwinders lose that register (and with the frame pointer, every caller whose CFA needs it)." },
	[LR_REG_SAVED_EARLY] = { "JD058", "reg-saved-early", LINT_ERROR,
		"perf's DWARF unwinders take the caller's register from the slot the rule names, which holds something else until the code stores it there, so the caller's frame is computed from a wrong value." },
	[LR_RA_VS_CODE] = { "JD059", "ra-vs-code", LINT_ERROR,
		"perf's DWARF unwinders take the caller's pc from the return address rule, so a rule that does not say where the code keeps the return address gives a wrong caller or ends the chain." },
	[LR_FRAME_BEYOND_STACK] = { "JD080", "frame-beyond-stack", LINT_WARNING,
		"perf copies only this many bytes of user stack per sample (--call-graph dwarf,SIZE), so a return address above that is outside the copy and the DWARF unwinders stop at this frame; its libunwind path never reads the copy's last word (access_mem wants addr + 8 < end)." },
	[LR_REG_PAST_LIBUNWIND] = { "JD055", "reg-past-libunwind", LINT_WARNING,
		"perf's libunwind path fails the whole step at a CFA instruction that names a register past libunwind's table (x86_64: DWARF 0-16, so no xmm, rflags or segment register; DW_CFA_restore gives -UNW_EINVAL, the others -UNW_EBADREG), so the chain ends at this frame; libdw ignores such rules." },
	[LR_DEBUG_NAME] = { "JD076", "debug-name", LINT_WARNING,
		"perf copies each line entry's file name as a C string into the jitted .so's .debug_line, so non-printable bytes or a name that does not end where the next entry starts give perf report garbage file names or misplaced lines." },
	[LR_CODE_UNDECODED] = { "JD081", "code-undecoded", LINT_WARNING,
		"not perf's doing (perf's unwinders read the rows, not the code): lint's decoder cannot decode an instruction here, so the code check cannot compare the rows that follow with what the code does, and an error in them goes unreported." },
	[LR_DUMP_DIR] = { "JD091", "dump-dir", LINT_WARNING,
		"perf >= 6.8's libdw unwinder (perf 7's only DWARF unwinder) takes a jitted .so for JIT code only when it is named /tmp/jitted-*, so for a dump read elsewhere it finds no module for the code and unwinds no frame of it." },
	[LR_LOAD_NO_UNWIND] = { "JD028", "load-no-unwind", LINT_ERROR,
		"perf's jitted .so of a load without UNWINDING_INFO has no .eh_frame: with --call-graph dwarf perf's unwinder (libunwind in perf 6.1/6.12, libdw in 7.x) finds no CFI for that code and ends the chain at its frame, with no frame-pointer fallback; with -g the kernel's rbp walk is right only if that code keeps rbp as its frame pointer." },
	[LR_NO_UNWIND_INFO] = { "JD029", "no-unwind-info", LINT_ERROR,
		"no load of the dump has UNWINDING_INFO: with --call-graph dwarf perf (libunwind in 6.1/6.12, libdw in 7.x) ends every chain at its first JIT frame, no caller shown (measured on QEMU 10 and 11); with -g the kernel's rbp walk is right only if the JIT code keeps rbp as its frame pointer (QEMU's does not: one bogus frame, then the end)." },
	[LR_RECORD_TID] = { "JD017", "record-tid", LINT_INFO,
		"perf injects the MMAP2 with the record's pid and tid, and a thread that is not its process's leader shares the leader's maps, so a tid that names no thread costs nothing: samples of every thread of the pid resolve to the code (measured on Erlang's dumps, perf 6.12 and 7.2)." },
	[LR_CODE_UNRELOCATED] = { "JD082", "code-unrelocated", LINT_WARNING,
		"perf writes a load's bytes into its jitted .so as the dump has them, so code dumped before the JIT relocated it shows perf annotate and objdump calls to address 0 where the running code calls its target; the unwinders are not affected (the return addresses are the same)." },
	[LR_NO_FDE_NO_FALLBACK] = { "JD083", "no-fde-no-fallback", LINT_WARNING,
		"perf on this arch unwinds with libdw alone (riscv64: tools/perf/arch/riscv builds no other DWARF unwinder), and elfutils' backend for it has no frame-pointer fallback, so a sample in code without an FDE gets a chain of its pc alone: no caller, no interpreter frame." },
	[LR_FP_NO_FRAME] = { "JD084", "fp-no-frame", LINT_WARNING,
		"with -g (--call-graph fp) the kernel walks frame pointers: at a sample in this function, which calls others and builds no frame record, or in any function it calls, the frame pointer still holds its caller's value, so the walk reads the caller's record, whose return address is the caller's caller's: this function's caller is missing from every such chain (--call-graph dwarf is not affected)." },
	[LR_FP_CLOBBERED] = { "JD085", "fp-clobbered", LINT_ERROR,
		"with -g (--call-graph fp) the kernel takes the frame pointer as the address of a record {caller's frame pointer, return address}: where the code keeps anything else there (HotSpot's C2 and other JITs use rbp as an ordinary register), the walk reports whatever the two words it points at hold as callers, and goes on from there (--call-graph dwarf is not affected)." },
	[LR_CODE_NOT_CODE] = { "JD087", "code-not-code", LINT_WARNING,
		"perf writes a load's bytes into its jitted .so as the dump has them, so where they are not the code that ran, perf annotate and objdump of the .so show instructions the process never ran; perf's unwinders read the CFI and the stack, not these bytes." },
	[LR_CODE_REUSED] = { "JD062", "code-reused", LINT_WARNING,
		"perf keeps what it learned of the earlier load at these addresses (libunwind's cached rules per process until an exec, perf 7's libdw module per process until a map is removed), so chains through the new code can be unwound with the earlier load's CFI." },
	[LR_FP_WINDOW] = { "JD086", "fp-window", LINT_WARNING,
		"with -g (--call-graph fp) the kernel's walk skips a function's caller at every sample taken while the frame pointer still holds the caller's value: the instructions that push and set it, and those after it is restored; here the code does more work in that window than the frame's own instructions, so more samples lose the caller (--call-graph dwarf is not affected)." },
};

const char *lint_sev_name(enum lint_sev s)
{
	return s == LINT_ERROR ? "error" : s == LINT_WARNING ? "warning" : "info";
}

const struct lint_rule *lint_rule_find(const char *s)
{
	for (size_t i = 0; i < LR__COUNT; i++)
		if (lint_rules[i].id && (!strcmp(s, lint_rules[i].id) || !strcmp(s, lint_rules[i].name)))
			return &lint_rules[i];
	return NULL;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void lint_walk_error(const struct ju_err *e, struct lint_finding *f)
{
	enum lint_rule_id id = e->kind == JDR_SIZE_SMALL ? LR_RECORD_SIZE :
			       e->kind == JDR_PREFIX_TRUNCATED || e->kind == JDR_PAST_END ? LR_RECORD_TRUNCATED :
			       LR_NOT_JITDUMP;
	memset(&f->where, 0, sizeof(f->where));   /* about the file, not any code */
	f->rule = &lint_rules[id];
	f->offset = e->offset;
	snprintf(f->msg, sizeof(f->msg), "%s", e->msg);
}

/* ---- perf's view ---- */

void lint_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
		 const struct jdr_unw *u, struct pv_layout *out)
{
	struct pv_unwind_sizes us = { 0, 0, 0 };
	if (u)
		us = (struct pv_unwind_sizes){ u->unwinding_size, u->eh_frame_hdr_size, u->mapped_size };
	pv_layout(prof, code_addr, code_size, u ? &us : NULL, out);
}

/* ---- the linting walk ---- */

/* The name of the CODE_LOAD at file offset off, read back from the map ("" if
 * that is no load with a name); the last one asked is kept. */
static const char *func_name(struct lint_ctx *c, uint64_t off)
{
	if (!off)
		return "";
	if (c->name_off == off)
		return c->name_buf;
	struct jdr_iter it = { c->data, c->size, (size_t)off, c->hdr, 0 };
	struct jdr_rec r;
	struct ju_err e;
	c->name_buf[0] = 0;
	if (off < c->size && jdr_next(&it, &r, &e) > 0 && r.id == JD_CODE_LOAD && !r.short_fixed && r.u.load.name)
		snprintf(c->name_buf, sizeof(c->name_buf), "%s", r.u.load.name);
	c->name_off = off;
	return c->name_buf;
}

/* Does the message hold the name already, quoted or in parentheses (JD048's "(name)")? */
static bool has_name(const char *msg, const char *name)
{
	char q[48];
	bool whole = strlen(name) <= 40;      /* a longer name: its first 40 bytes */
	snprintf(q, sizeof(q), "'%.40s%s", name, whole ? "'" : "");
	if (strstr(msg, q))
		return true;
	snprintf(q, sizeof(q), "(%.40s%s", name, whole ? ")" : "");
	return strstr(msg, q) != NULL;
}

/* "'jit_mid' (" before the CODE_LOAD at 0x176 that starts at p and ends at
 * end, in f's message, when that load has a name the message does not hold;
 * where to look on from. */
static size_t name_one(struct lint_ctx *c, struct lint_finding *f, const char *p, const char *end, uint64_t off)
{
	const char *name = func_name(c, off);
	char ins[96], tmp[sizeof(f->msg)];
	if (!name[0] || has_name(f->msg, name))
		return (size_t)(end - f->msg);
	size_t head = (size_t)(p - f->msg);
	snprintf(ins, sizeof(ins), "'%.80s%s' (", name, strlen(name) > 80 ? "..." : "");
	snprintf(tmp, sizeof(tmp), "%.*s%s%.*s)%s", (int)head, f->msg, ins, (int)(end - p), p, end);
	memcpy(f->msg, tmp, sizeof(tmp));
	size_t to = head + strlen(ins) + (size_t)(end - p) + 1;
	return to < sizeof(f->msg) ? to : sizeof(f->msg) - 1;
}

/* The message names its functions: every "the CODE_LOAD at 0x176" becomes
 * "'jit_mid' (the CODE_LOAD at 0x176)"; a message about a load (where.load)
 * that names neither it nor its offset starts with "'jit_mid': ". */
static void name_func(struct lint_ctx *c, struct lint_finding *f)
{
	static const char key[] = "the CODE_LOAD at 0x";
	bool said = false;
	size_t from = 0;
	for (int k = 0; k < 8 && from < sizeof(f->msg); k++) {   /* a message names a few loads */
		const char *p = strstr(f->msg + from, key);
		if (!p)
			break;
		char *end;
		uint64_t off = strtoull(p + sizeof(key) - 1, &end, 16);
		said |= off == f->where.load;
		from = name_one(c, f, p, end, off);
	}
	char tmp[sizeof(f->msg)];
	if (said || !f->func[0] || has_name(f->msg, f->func))
		return;
	snprintf(tmp, sizeof(tmp), "'%.80s%s': %s", f->func, strlen(f->func) > 80 ? "..." : "", f->msg);
	memcpy(f->msg, tmp, sizeof(tmp));
}

static void report_v(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const struct lint_where *w,
		     const char *fmt, va_list ap)
{
	const struct lint_rule *r = &lint_rules[id];
	c->sum->count[r->sev]++;
	uint64_t k = ++c->sum->per_rule[id];
	if (c->o->max_per_rule && k > c->o->max_per_rule)
		return;
	struct lint_finding f;
	memset(&f.where, 0, sizeof(f.where));
	f.rule = r;
	f.offset = off;
	if (w) {
		f.where = *w;
	} else if (c->scope_set) {
		f.where.load = c->scope_load;
		f.where.whole = true;
	}
	vsnprintf(f.msg, sizeof(f.msg), fmt, ap);
	snprintf(f.func, sizeof(f.func), "%s", func_name(c, f.where.load));
	name_func(c, &f);
	if (c->cb)
		c->cb(&f, c->arg);
}

void lint_report(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_v(c, id, off, NULL, fmt, ap);
	va_end(ap);
}

bool lint_quiet(const struct lint_ctx *c, enum lint_rule_id id)
{
	return c->o->max_per_rule && c->sum->per_rule[id] >= c->o->max_per_rule;
}

void lint_report_at(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const struct lint_where *w,
		    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_v(c, id, off, w, fmt, ap);
	va_end(ap);
}

static uint64_t hash_code(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0x243f6a8885a308d3ull ^ n;
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	uint64_t w = 0;
	for (uint64_t k = 0; i < n; i++, k++)
		w |= (uint64_t)p[i] << (8 * k);
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 32);
}

static void check_header(struct lint_ctx *c)
{
	const struct jdr_hdr *h = &c->hdr;
	if (h->version > 1)   /* perf takes 0 too */
		lint_report(c, LR_VERSION, JD_HDR_VERSION, "version %u, expected 1: perf rejects the whole dump", h->version);
	if (h->total_size != JD_HDR_SIZE)
		lint_report(c, LR_HEADER_SIZE, JD_HDR_TOTAL_SIZE, "header total_size %u, expected 40: %s", h->total_size,
		       h->total_size > 80 ? "perf's skip of the extra bytes fails and it rejects the dump" :
		       h->total_size > JD_HDR_SIZE ? "perf reads the extra header bytes as the first record" :
		       "perf reads the first record at offset 40 anyway");
	if (h->flags & ~1ull) {
		char note[160];
		lint_prod_flags_note(h->flags, note, sizeof(note));
		lint_report(c, LR_HEADER_FLAGS, JD_HDR_FLAGS, "flags 0x%" PRIx64 ": unknown bits 0x%" PRIx64 "%s", h->flags,
		       h->flags & ~(uint64_t)1, note);
	}
	if (h->flags & 1)
		lint_report(c, LR_ARCH_TIMESTAMP, 32, "JITDUMP_FLAGS_ARCH_TIMESTAMP is set: timestamps are TSC values, "
		       "not CLOCK_MONOTONIC");
	/* perf never reads elf_mach (genelf writes the machine perf was built
	 * for): a dump that leaves it 0 is read on the machine it was written
	 * on, so the code checks take the host's (CPython 3.13.0 writes 0) */
	const struct uw_arch *host = uw_arch_host();
	c->mach = h->elf_mach || !host ? h->elf_mach : host->facts->elf_mach;
	if (!h->elf_mach && host)
		lint_report(c, LR_ELF_MACH, JD_HDR_ELF_MACH, "elf_mach 0: perf does not read it (its jitted .so files "
			    "get the machine perf was built for), so lint checks the code as %s, this host's", host->facts->name);
	else if (!uw_mach_name(h->elf_mach))
		lint_report(c, LR_ELF_MACH, JD_HDR_ELF_MACH, "elf_mach %u is not a machine perf supports", h->elf_mach);
	else if (h->elf_mach <= UINT16_MAX && uw_arch_by_mach((uint16_t)h->elf_mach) &&
		 !uw_arch_by_mach((uint16_t)h->elf_mach)->decoder)
		lint_report(c, LR_ELF_MACH, JD_HDR_ELF_MACH, "elf_mach %u (%s): lint has no instruction decoder for it, "
			    "so the code check (the CFI rows against what the code does) does not run on this dump",
			    h->elf_mach, uw_mach_name(h->elf_mach));
	if (c->o->name) {
		const char *b = strrchr(c->o->name, '/');
		b = b ? b + 1 : c->o->name;
		unsigned pid = 0;
		int n = 0;
		if (sscanf(b, "jit-%u.dump%n", &pid, &n) != 1 || b[n] || pid != h->pid)
			lint_report(c, LR_FILE_NAME, 0, "file name '%s' is not jit-%u.dump (the header's pid)", b, h->pid);
	}
	/* perf inject writes the .so files next to the dump; the libdw path of
	 * perf >= 6.8 tests the name's prefix (the v6.1 profile feeds libdw
	 * every DSO alike) */
	if (c->o->dump_dir && c->prof == PV_CURRENT && strcmp(c->o->dump_dir, "/tmp") &&
	    strcmp(c->o->dump_dir, "/tmp/")) {
		static const struct lint_where all = { .whole = true };
		lint_report_at(c, LR_DUMP_DIR, 0, &all, "perf reads this dump in %.200s, so its jitted .so files are "
			       "%.200s/jitted-%u-<index>.so, not /tmp/jitted-*", c->o->dump_dir, c->o->dump_dir, h->pid);
	}
	if (!c->profile_said && c->prof != PV_CURRENT) {
		c->profile_said = true;
		static const struct lint_where every = { .whole = true };   /* every load */
		if (c->prof == PV_V61)
			lint_report_at(c, LR_PERF_PROFILE, 0, &every, "profile v6.1: perf v6.1-v6.7 computes libunwind's base as the map "
			       "start without -pgoff and writes PT_LOAD at 0, so every .eh_frame_hdr lookup is 0x80 off: "
			       "its libunwind path unwinds no jitted code; libdw is fed correctly");
		else if (c->prof == PV_510)
			lint_report_at(c, LR_PERF_PROFILE, 0, &every, "profile 5.10.y: perf 5.10.223 gives the jitted .so section "
			       "addresses, PT_LOAD and an MMAP2 pgoff of 0x40 while libelf lays .text out at file offset "
			       "0x80: symbols resolve, but its libunwind path computes the .eh_frame_hdr's address from "
			       "the file offset, 0x40 too far, so it unwinds no jitted code");
		else
			lint_report_at(c, LR_PERF_PROFILE, 0, &every, "profile 5.x-0x40: perf gives the jitted .so section addresses and "
			       "an MMAP2 pgoff of 0x40 while libelf lays .text out at file offset 0x80, so every pc in JIT "
			       "code is read 0x40 bytes early from the file and misses its symbol (CPython's 'symbols "
			       "missing on Ubuntu' bug)");
	}
}

static void limit_said(struct lint_ctx *c, int which, uint64_t off)
{
	static const char *const what[2] = { "live mappings", "code_index intervals" };
	static const unsigned cap[2] = { LINT_MAX_MAPS, LINT_MAX_INDEX };
	if (c->limits_said[which])
		return;
	c->limits_said[which] = true;
	lint_report(c, LR_LIMIT, off, "more than %u %s: the oldest are forgotten from here on", cap[which], what[which]);
}

/* Place a mapping in perf's map tree (the treap holds its disjoint pieces):
 * report what the new one does to the live ones, then cut them. */
static void place_mapping(struct lint_ctx *c, uint64_t rec_off, uint64_t start, uint64_t len,
			  uint64_t code_size, uint64_t index, const char *name)
{
	if (!len)
		return;
	uint64_t end = start + len, cend = start + code_size;
	bool said_tail = false, said_code = false;
	char what[96] = "";
	/* JITs mostly place code upwards: past every live mapping, nothing to cut */
	bool past = c->maps.used && start >= c->maps_end;
	for (unsigned guard = 0; !past && guard < 4 * LINT_MAX_MAPS; guard++) {
		uint32_t x = lint_it_overlap(&c->maps, start, end);
		if (!x)
			break;
		struct inode o = c->maps.n[x];
		bool code_hit = start < o.code_end && o.code_start < cend;   /* code over code: reuse */
		if (code_hit && name)
			lint_reuse_check(c, rec_off, &o, start, cend, name);
		if (!code_hit && !what[0]) {
			if (name)
				snprintf(what, sizeof(what), "the CODE_LOAD '%.40s'", name);
			else
				snprintf(what, sizeof(what), "the CODE_MOVE");
		}
		if (!code_hit) {
			if (o.start < start && start < o.end && o.code_end <= start && !said_tail) {
				said_tail = true;
				lint_report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), inside the "
				       "mapping [0x%" PRIx64 ", 0x%" PRIx64 ") of the CODE_LOAD at 0x%" PRIx64 ": perf cuts that "
				       "one at 0x%" PRIx64 " and loses the %" PRIu64 " bytes of its unwinding data after it",
				       what, start, end, o.start, o.end, o.load_off, start, o.end - start);
			} else if (o.code_start < end && start < o.code_end && !said_code) {
				said_code = true;
				lint_report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), over the code "
				       "[0x%" PRIx64 ", 0x%" PRIx64 ") of the CODE_LOAD at 0x%" PRIx64 ": perf resolves "
				       "samples there against this load's DSO", what, start, end, o.code_start,
				       o.code_end, o.load_off);
			} else if (!said_tail && !said_code && o.code_end <= start) {
				said_tail = true;
				lint_report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), over the "
				       "unwinding data mapped at [0x%" PRIx64 ", 0x%" PRIx64 ") for the CODE_LOAD at 0x%"
				       PRIx64, what, start, end, o.start, o.end, o.load_off);
			}
		}
		/* cut: keep the parts outside [start, end) */
		lint_it_delete(&c->maps, x);
		if (o.start < start) {
			struct inode a = o;
			a.end = start;
			lint_it_insert(&c->maps, &a);
		}
		if (o.end > end) {
			struct inode b = o;
			b.start = end;
			lint_it_insert(&c->maps, &b);
		}
	}
	struct inode n = { .start = start, .end = end, .load_off = rec_off, .code_index = index,
			   .code_start = start, .code_end = cend, .unw_known = name != NULL,
			   .has_unw = name && c->cur_has_unw, .unw_hash = name ? c->cur_unw_hash : 0 };
	lint_it_insert(&c->maps, &n);
	if (end > c->maps_end || c->maps.used == 1)
		c->maps_end = end;
	if (c->maps.forgot)
		limit_said(c, 0, rec_off);
}

/* code_index seen: intervals [start, end) of indices.  true if already seen. */
static bool index_seen(struct lint_ctx *c, uint64_t idx, bool add, uint64_t off)
{
	struct itree *t = &c->index;
	if (idx == UINT64_MAX) {
		/* [idx, idx + 1) would wrap: one flag instead */
		bool seen = c->index_max;
		c->index_max |= add;
		return seen;
	}
	uint32_t x = lint_it_le(t, idx);
	if (x && idx < t->n[x].end)
		return true;
	if (!add)
		return false;
	uint32_t nx = lint_it_gt(t, idx);
	if (x && t->n[x].end == idx && idx != UINT64_MAX) {
		t->n[x].end = idx + 1;
		if (nx && t->n[nx].start == idx + 1) {
			uint64_t e = t->n[nx].end;
			lint_it_delete(t, nx);
			t->n[x].end = e;
		}
		return false;
	}
	if (nx && t->n[nx].start == idx + 1) {
		/* the key shrinks by one and stays between its neighbours */
		t->n[nx].start = idx;
		return false;
	}
	struct inode n = { .start = idx, .end = idx + 1 };
	lint_it_insert(t, &n);
	if (t->forgot)
		limit_said(c, 1, off);
	return false;
}

/* The first CODE_LOAD within two records of off (the one after an
 * UNWINDING_INFO, or the next load): hash its code (perf's copy, the last
 * code_size bytes of the record, as jdr_next takes it) and fetch its slot of
 * the code hashes, a cache miss that would stall check_identical, while the
 * records before it are checked.  Only a hint: on_load takes the hash when
 * the load it walks is that record with that code_size, else hashes again. */
static void prefetch_code_slot(struct lint_ctx *c, size_t off)
{
	for (int k = 0; k < 2 && c->codes; k++) {
		if (off >= c->size || c->size - off < JD_LOAD_FIXED)
			return;
		const uint8_t *p = c->data + off;
		uint32_t id, size;
		memcpy(&id, p + JD_REC_ID, 4);
		memcpy(&size, p + JD_REC_TOTAL_SIZE, 4);
		if (size < JD_REC_PREFIX || size > c->size - off)
			return;
		if (id == JD_CODE_LOAD) {
			uint64_t n;
			memcpy(&n, p + JD_LOAD_CODE_SIZE, 8);
			if (size < JD_LOAD_FIXED || n > size - JD_LOAD_FIXED || off == c->peek_off)
				return;
			c->peek_off = off;
			c->peek_size = n;
			c->peek_hash = hash_code(p + size - n, n);
			__builtin_prefetch(&c->codes[c->peek_hash & (c->ncodes - 1)]);
			return;
		}
		off += size;
	}
}

/* Is the load's code an earlier load's?  (c->code_seen, for the code
 * check's memo; not a finding: perf 6.1 gives two jitted .so files of the
 * same code different build-ids.)  h: hash_code of the load's code */
static void check_identical(struct lint_ctx *c, const struct jdr_rec *r, uint64_t h)
{
	const struct jdr_load *l = &r->u.load;
	c->code_seen = false;
	if (!c->codes || !l->code || !l->code_size)
		return;
	if (c->codes_used * 2 >= c->ncodes && c->ncodes < LINT_CODE_SLOTS) {
		/* double and re-place: slots remember their hash */
		uint32_t nn = c->ncodes * 2;
		struct code_slot *ns = calloc(nn, sizeof(*ns));
		if (ns) {
			c->codes_used = 0;
			for (uint32_t i = 0; i < c->ncodes; i++) {
				if (!c->codes[i].load_off)
					continue;
				struct code_slot *d = &ns[c->codes[i].hash & (nn - 1)];
				c->codes_used += !d->load_off;
				*d = c->codes[i];
			}
			free(c->codes);
			c->codes = ns;
			c->ncodes = nn;
		}
	}
	struct code_slot *s = &c->codes[h & (c->ncodes - 1)];
	if (s->load_off && s->hash == h) {
		/* the earlier load, read back from the map (decoded as before) */
		struct jdr_iter it = { c->data, c->size, (size_t)s->load_off, c->hdr, 0 };
		struct jdr_rec o;
		struct ju_err f;
		const struct jdr_load *ol = &o.u.load;
		if (jdr_next(&it, &o, &f) > 0 && ol->code && ol->code_size == l->code_size &&
		    !memcmp(ol->code, l->code, (size_t)l->code_size)) {
			c->code_seen = true;
			return;
		}
	}
	c->codes_used += !s->load_off;
	s->hash = h;
	s->load_off = r->off;
}

/* Length of a valid UTF-8 sequence at p (at most n bytes), 0 if none. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	size_t k = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	if (!k || k > n)
		return 0;
	for (size_t j = 1; j < k; j++)
		if ((p[j] & 0xc0) != 0x80)
			return 0;
	return k;
}

/* JD076: the file names of the line entries perf will copy.  A name with a
 * control byte or bytes that are not UTF-8 (V8 in node 20 overwrote names
 * with garbage), and bytes after the last entry that are not the zero
 * padding to 8 (entries that do not end at the record's end). */
static void check_debug_names(struct lint_ctx *c, const struct jdr_debug *d, uint64_t doff, size_t end)
{
	size_t pos = 0, bad = 0, first_at = 0;
	for (uint64_t i = 0; i < d->nr_entry && pos + 16 < d->len; i++) {
		const uint8_t *nm = d->entries + pos + 16;
		const uint8_t *nul = memchr(nm, 0, d->len - pos - 16);
		if (!nul)
			break;
		size_t n = (size_t)(nul - nm);
		for (size_t k = 0; k < n;) {
			size_t u = nm[k] >= 0x80 ? utf8_len(nm + k, n - k) : nm[k] >= 0x20 && nm[k] != 0x7f;
			if (!u) {
				if (!bad++)
					first_at = pos + 16 + k;
				break;
			}
			k += u;
		}
		pos = (size_t)(nul - d->entries) + 1;
	}
	if (bad)
		lint_report(c, LR_DEBUG_NAME, doff + JD_DEBUG_FIXED + first_at, "%zu line entr%s a file name with a "
			    "non-printable or non-UTF-8 byte, the first 0x%02x at 0x%" PRIx64, bad, bad == 1 ? "y has" : "ies have",
			    d->entries[first_at], doff + JD_DEBUG_FIXED + first_at);
	if (end < d->len && (d->len - end >= 8 || !lint_all_zero(d->entries + end, d->len - end)))
		lint_report(c, LR_DEBUG_NAME, doff + JD_DEBUG_FIXED + end, "the %" PRIu64 " line entries end %zu bytes "
			    "before the record does, and the bytes after them are not padding", d->nr_entry, d->len - end);
}

static void check_debug_for_load(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_debug *d,
				  uint64_t doff)
{
	const struct jdr_load *l = &r->u.load;
	if (d->code_addr != l->code_addr) {
		if (c->dbg_after_load && d->code_addr == c->dbg_prev_addr)
			lint_report(c, LR_DEBUG_AFTER_LOAD, doff, "DEBUG_INFO for code_addr 0x%" PRIx64 " follows the CODE_LOAD "
			       "of that address; perf gives it to the CODE_LOAD at 0x%" PRIx64 " (code_addr 0x%" PRIx64 ")",
			       d->code_addr, r->off, l->code_addr);
		else
			lint_report(c, LR_DEBUG_MISMATCH, doff, "DEBUG_INFO for code_addr 0x%" PRIx64 " is given to the next "
			       "CODE_LOAD at 0x%" PRIx64 ", whose code_addr is 0x%" PRIx64, d->code_addr, r->off,
			       l->code_addr);
	}
	/* entries: {u64 addr, i32 lineno, i32 discrim, name\0}, checked at the record */
	size_t pos = 0, out = 0;
	uint64_t first = 0, i = 0;
	for (; i < d->nr_entry && pos + 16 < d->len; i++) {
		uint64_t a = rd64(d->entries + pos);
		const uint8_t *nul = memchr(d->entries + pos + 16, 0, d->len - pos - 16);
		if (!nul)
			break;
		/* the last entry at the code's end is the conventional terminator
		 * (QEMU: "perf requires a terminating entry"; Erlang's dummy line) */
		bool term = a == l->code_addr + l->code_size && i + 1 == d->nr_entry;
		if ((a < l->code_addr || a >= l->code_addr + l->code_size) && !term) {
			if (!out++)
				first = a;
		}
		pos = (size_t)(nul - d->entries) + 1;
	}
	check_debug_names(c, d, doff, i == d->nr_entry ? pos : d->len);
	if (out)
		lint_report(c, LR_DEBUG_RANGE, doff, "%zu line entr%s outside the code [0x%" PRIx64 ", 0x%" PRIx64 ") of the "
		       "CODE_LOAD at 0x%" PRIx64 ", the first at 0x%" PRIx64, out, out == 1 ? "y lies" : "ies lie",
		       l->code_addr, l->code_addr + l->code_size, r->off, first);
}

static void on_load(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	c->sum->loads++;
	const struct jdr_unw *u;
	const struct jdr_debug *d;
	uint64_t uoff = 0, doff = 0;
	/* a sticky (eh_frame_hdr_size 0) info already checked against its first load */
	bool again = c->ps.unw_set && c->unw_used;
	jdr_pending_step(&c->ps, r, &u, &uoff, &d, &doff);
	if (u)
		c->unw_used = true;
	if (r->short_fixed) {
		lint_report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_LOAD total_size %u, below its 56-byte fixed part and the "
		       "name's NUL", r->size);
		return;
	}
	if (!l->name) {
		lint_report(c, LR_LOAD_NAME, r->off + JD_LOAD_FIXED, "CODE_LOAD name is not NUL-terminated inside the record "
		       "(%u bytes)", r->size);
		return;
	}
	lint_prod_on_load(c, r, u != NULL);
	if (l->pid != c->hdr.pid)
		lint_report(c, LR_RECORD_PID, r->off + JD_LOAD_PID, "CODE_LOAD '%.60s' has pid %u, the header's is %u", l->name,
		       l->pid, c->hdr.pid);
	if (!l->code) {
		lint_report(c, LR_LOAD_CODE_SIZE, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s': code_size %" PRIu64 " does not fit the %zu "
		       "bytes after the name", l->name, l->code_size, (size_t)r->size - JD_LOAD_FIXED - l->name_len - 1);
		return;
	}
	/* the same bytes prefetch_code_slot hashed, or hash them now */
	uint64_t h = c->peek_off == r->off && c->peek_size == l->code_size ? c->peek_hash :
		     hash_code(l->code, l->code_size);
	if (l->code_size > INT32_MAX)
		lint_report(c, LR_LOAD_CODE_SIZE, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s': code_size %" PRIu64 " does not fit perf's "
		       "int", l->name, l->code_size);
	if (l->gap) {
		const uint8_t *g = (const uint8_t *)l->name + l->name_len + 1;
		if (!lint_all_zero(g, l->gap) && lint_all_zero(r->p + r->size - l->gap, l->gap))
			lint_report(c, LR_LOAD_TRAILING, r->off + r->size - l->gap, "CODE_LOAD '%.60s': the %zu bytes after the "
			       "name are not zero and the record's last %zu bytes are: the code seems to follow the name "
			       "with padding after it, and perf's copy of it starts %zu bytes late", l->name, l->gap,
			       l->gap, l->gap);
	}
	if (!l->code_size)
		lint_report(c, LR_LOAD_EMPTY, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s' has code_size 0", l->name);
	if (l->vma != l->code_addr)
		lint_report(c, LR_LOAD_VMA, r->off + JD_LOAD_VMA, "CODE_LOAD '%.60s': vma 0x%" PRIx64 " != code_addr 0x%" PRIx64,
		       l->name, l->vma, l->code_addr);
	if (index_seen(c, l->code_index, true, r->off))
		lint_report(c, LR_DUPLICATE_INDEX, r->off + JD_LOAD_CODE_INDEX, "CODE_LOAD '%.60s' reuses code_index %" PRIu64, l->name,
		       l->code_index);
	check_identical(c, r, h);
	lint_salt_on_load(c, r);
	if (d)
		check_debug_for_load(c, r, d, doff);
	struct pv_layout ly;
	lint_layout(c->prof, l->code_addr, l->code_size, u, &ly);
	c->cur_has_unw = u != NULL;
	c->cur_unw_hash = u ? hash_code(u->data, u->avail < u->unwinding_size ? u->avail : u->unwinding_size) : 0;
	c->reuse_said = false;
	if (ly.map_start + ly.map_len < ly.map_start) {
		lint_report(c, LR_ADDR_WRAP, r->off + JD_LOAD_CODE_ADDR, "CODE_LOAD '%.60s': [0x%" PRIx64 ", +0x%" PRIx64 ") wraps around",
		       l->name, ly.map_start, ly.map_len);
	} else {
		place_mapping(c, r->off, ly.map_start, ly.map_len, l->code_size, l->code_index, l->name);
	}
	if (u && !again && !c->unw_bad)
		lint_check_unwind(c, r, u, uoff, &ly);
	if (c->not_code)
		lint_salt_found(c, r);   /* and no code check of its own: its bytes are not the code */
	else
		lint_fp_check(c, r);
}

static void on_unwind(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		lint_report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_UNWINDING_INFO total_size %u, below its 40-byte fixed part",
		       r->size);
		return;
	}
	const struct jdr_unw *u = &r->u.unw;
	if (c->ps.unw_set && !c->unw_used)
		lint_report(c, LR_UNWIND_OVERWRITTEN, c->ps.unw_off, "UNWINDING_INFO is replaced by the one at 0x%" PRIx64
		       " before any CODE_LOAD", r->off);
	c->unw_bad = false;
	if (u->unwinding_size > u->avail) {
		lint_report(c, LR_UNWIND_SIZE, r->off + JD_UNW_UNWINDING_SIZE, "unwinding_size %" PRIu64 " runs past the record's %zu bytes of "
		       "data", u->unwinding_size, u->avail);
		c->unw_bad = true;
	} else if (u->eh_frame_hdr_size > u->unwinding_size) {
		lint_report(c, LR_UNWIND_SIZE, r->off + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size %" PRIu64 " is larger than unwinding_size %"
		       PRIu64, u->eh_frame_hdr_size, u->unwinding_size);
		c->unw_bad = true;
	} else if (!u->unwinding_size) {
		lint_report(c, LR_UNWIND_EMPTY, r->off + JD_UNW_UNWINDING_SIZE, "unwinding_size 0");
	} else if (!u->eh_frame_hdr_size) {
		lint_report(c, LR_HDR_SIZE_ZERO, r->off + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size 0 with %" PRIu64 " bytes of unwinding data",
		       u->unwinding_size);
	}
	c->unw_after_load = c->prev_load;
	c->unw_prev_off = c->prev_load_off;
	c->unw_prev_addr = c->prev_code_addr;
	c->unw_prev_size = c->prev_code_size;
	c->unw_used = false;
	jdr_pending_step(&c->ps, r, NULL, NULL, NULL, NULL);
}

static void on_debug(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		lint_report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_DEBUG_INFO total_size %u, below its 32-byte fixed part",
		       r->size);
		return;
	}
	const struct jdr_debug *d = &r->u.debug;
	if (c->ps.dbg_set)
		lint_report(c, LR_DEBUG_OVERWRITTEN, c->ps.dbg_off, "DEBUG_INFO is replaced by the one at 0x%" PRIx64
		       " before any CODE_LOAD", r->off);
	/* each entry is at least 17 bytes: the loop ends within len / 17 steps */
	size_t pos = 0;
	uint64_t i = 0;
	for (; i < d->nr_entry; i++) {
		if (d->len - pos < 17)
			break;
		const uint8_t *nul = memchr(d->entries + pos + 16, 0, d->len - pos - 16);
		if (!nul)
			break;
		pos = (size_t)(nul - d->entries) + 1;
	}
	if (i < d->nr_entry)
		lint_report(c, LR_DEBUG_ENTRIES, r->off + JD_DEBUG_NR_ENTRY, "nr_entry %" PRIu64 ", but only %" PRIu64 " whole entr%s fit the "
		       "record's %zu bytes", d->nr_entry, i, i == 1 ? "y" : "ies", d->len);
	c->dbg_after_load = c->prev_load;
	c->dbg_prev_addr = c->prev_code_addr;
	jdr_pending_step(&c->ps, r, NULL, NULL, NULL, NULL);
}

static void on_move(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		lint_report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_MOVE total_size %u, below its 64 bytes", r->size);
		return;
	}
	const struct jdr_move *m = &r->u.move;
	if (m->pid != c->hdr.pid)
		lint_report(c, LR_RECORD_PID, r->off + JD_MOVE_PID, "CODE_MOVE has pid %u, the header's is %u", m->pid, c->hdr.pid);
	if (!index_seen(c, m->code_index, false, r->off)) {
		lint_report(c, LR_MOVE_UNKNOWN, r->off + JD_MOVE_CODE_INDEX, "CODE_MOVE of code_index %" PRIu64 ", which no earlier CODE_LOAD "
		       "has", m->code_index);
	} else {
		uint32_t x = lint_it_le(&c->maps, m->old_code_addr);
		const struct inode *o = x ? &c->maps.n[x] : NULL;
		if (!o || m->old_code_addr >= o->end || o->code_index != m->code_index)
			lint_report(c, LR_MOVE_MISMATCH, r->off + JD_MOVE_OLD_CODE_ADDR, "CODE_MOVE of code_index %" PRIu64 ": old_code_addr 0x%"
			       PRIx64 " is not where that load is mapped", m->code_index, m->old_code_addr);
		else if (o->code_end - o->code_start != m->code_size)
			lint_report(c, LR_MOVE_MISMATCH, r->off + JD_MOVE_CODE_SIZE, "CODE_MOVE of code_index %" PRIu64 ": code_size %" PRIu64
			       ", the load has %" PRIu64, m->code_index, m->code_size, o->code_end - o->code_start);
	}
	/* jit_repipe_code_move sizes the mapping with the PENDING unwinding info */
	struct pv_layout ly;
	lint_layout(c->prof, m->new_code_addr, m->code_size, c->ps.unw_set ? &c->ps.unw : NULL, &ly);
	uint64_t len = ly.map_len;
	if (m->new_code_addr + len < m->new_code_addr)
		lint_report(c, LR_ADDR_WRAP, r->off + JD_MOVE_NEW_CODE_ADDR, "CODE_MOVE to 0x%" PRIx64 " of 0x%" PRIx64 " bytes wraps around",
		       m->new_code_addr, len);
	else
		place_mapping(c, r->off, m->new_code_addr, len, m->code_size, m->code_index, NULL);
}

static void finish(struct lint_ctx *c)
{
	if (c->ps.unw_set && !c->unw_used && !c->unw_bad) {
		if (c->unw_after_load)
			lint_report_at(c, LR_UNWIND_AFTER_LOAD, c->ps.unw_off, &(struct lint_where){ .load = c->unw_prev_off,
			       .whole = true }, "UNWINDING_INFO follows the CODE_LOAD at 0x%" PRIx64
			       "%s, and no CODE_LOAD comes after it", c->unw_prev_off,
			       lint_unw_covers(c, &c->ps.unw, c->unw_prev_addr, c->unw_prev_size) ? ", which it describes" : "");
		else
			lint_report(c, LR_UNWIND_NO_LOAD, c->ps.unw_off, "no CODE_LOAD follows this UNWINDING_INFO");
	}
	if (c->ps.dbg_set) {
		if (c->dbg_after_load && c->ps.dbg.code_addr == c->dbg_prev_addr)
			lint_report(c, LR_DEBUG_AFTER_LOAD, c->ps.dbg_off, "DEBUG_INFO for code_addr 0x%" PRIx64 " follows the "
			       "CODE_LOAD of that address, and no CODE_LOAD comes after it", c->ps.dbg.code_addr);
		else
			lint_report(c, LR_DEBUG_NO_LOAD, c->ps.dbg_off, "no CODE_LOAD follows this DEBUG_INFO");
	}
	lint_prod_finish(c);
	lint_salt_finish(c);
}

int lint_walk_ctx(struct lint_ctx *c)
{
	struct jdr_iter it;
	struct ju_err we;
	struct lint_finding f;
	if (jdr_init(&it, c->data, c->size, &we)) {
		lint_walk_error(&we, &f);
		c->sum->unreadable = true;
		c->sum->fatal_offset = f.offset;
		snprintf(c->sum->fatal, sizeof(c->sum->fatal), "%s", f.msg);
		c->sum->count[LINT_ERROR]++;
		c->sum->per_rule[LR_NOT_JITDUMP]++;
		if (c->cb)
			c->cb(&f, c->arg);
		return -EINVAL;
	}
	c->hdr = it.hdr;
	check_header(c);
	struct jdr_rec r;
	for (;;) {
		int rc = jdr_next(&it, &r, &we);
		if (rc == 0)
			break;
		if (rc < 0) {
			lint_walk_error(&we, &f);
			lint_report(c, (enum lint_rule_id)(f.rule - lint_rules), f.offset, "%s", f.msg);
			break;
		}
		c->sum->records++;
		prefetch_code_slot(c, it.off);
		/* the hardware's prefetch stops at page ends: fetch the lines 4 KiB ahead */
		for (size_t ahead = it.off + 4096; c->fetched < ahead && c->fetched < c->size; c->fetched += 64)
			__builtin_prefetch(c->data + c->fetched);
		if (c->have_ts && r.timestamp < c->last_ts)
			lint_report(c, LR_TIMESTAMP_BACKWARDS, r.off + JD_REC_TIMESTAMP, "timestamp %" PRIu64 " is %" PRIu64 " ns before the "
			       "record at 0x%" PRIx64, r.timestamp, c->last_ts - r.timestamp, c->last_ts_off);
		c->have_ts = true;
		c->last_ts = r.timestamp;
		c->last_ts_off = r.off;
		if (c->closed && !c->after_close_said) {
			c->after_close_said = true;
			lint_report(c, LR_AFTER_CLOSE, r.off, "record id %u after CODE_CLOSE", r.id);
		}
		bool was_load = false;
		switch (r.id) {
		case JD_CODE_LOAD:
			on_load(c, &r);
			was_load = !r.short_fixed && r.u.load.name && r.u.load.code;
			if (was_load) {
				c->prev_load_off = r.off;
				c->prev_code_addr = r.u.load.code_addr;
				c->prev_code_size = r.u.load.code_size;
			}
			break;
		case JD_CODE_MOVE:
			on_move(c, &r);
			break;
		case JD_CODE_DEBUG_INFO:
			on_debug(c, &r);
			break;
		case JD_CODE_CLOSE:
			c->closed = true;
			break;
		case JD_CODE_UNWINDING_INFO:
			on_unwind(c, &r);
			break;
		default:
			lint_report(c, LR_RECORD_UNKNOWN, r.off, "record id %u (%u bytes)", r.id, r.size);
			break;
		}
		c->prev_load = was_load;
		lint_release_behind(c, it.off);
	}
	finish(c);
	return 0;
}

int lint_exit_code(const struct lint_summary *sum)
{
	if (sum->unreadable)
		return 2;
	return sum->count[LINT_ERROR] ? 1 : 0;
}
