/* The tracer's jitdump and breakpoints: find the jitdump (--jitdump, or the
 * marker mapping of jit-<pid>.dump in /proc/PID/maps), read it as it grows
 * through the one jitdump walk (jdr_init / jdr_next, remembering where it
 * stopped), decode each CODE_LOAD's code as it is in the process's memory
 * with capstone, and plant a one-shot breakpoint at every boundary. */
#include "harness/trace/trace_int.h"
#include "unwinders/model/jdwalk.h"

#include <capstone/capstone.h>
#include <inttypes.h>
#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct hx_trace_bp *bp_walk(struct tr_state *t, uint64_t addr, struct hx_trace_load **lp)
{
	for (size_t i = 0; i < t->res->nloads; i++) {
		struct hx_trace_load *l = &t->res->loads[i];
		if (l->closed || addr < l->addr || addr >= l->addr + l->size)
			continue;
		size_t lo = 0, hi = l->nbps;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (l->bps[mid].addr < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < l->nbps && l->bps[lo].addr == addr) {
			*lp = l;
			return &l->bps[lo];
		}
	}
	return NULL;
}

struct hx_trace_bp *tr_bp_find(struct tr_state *t, uint64_t addr, struct hx_trace_load **lp)
{
	if (!t->bpc && !(t->bpc = calloc(TR_BPC_SIZE, sizeof(*t->bpc))))
		return bp_walk(t, addr, lp);
	struct tr_bpc *e = &t->bpc[(size_t)((addr * 0x9e3779b97f4a7c15ull) >> 52) & (TR_BPC_SIZE - 1)];
	if (e->gen == t->lgen + 1 && e->addr == addr) {
		if (e->load < 0)
			return NULL;
		*lp = &t->res->loads[e->load];
		return &(*lp)->bps[e->bp];
	}
	struct hx_trace_bp *b = bp_walk(t, addr, lp);
	*e = (struct tr_bpc){ .addr = addr, .gen = t->lgen + 1, .load = b ? (int32_t)(*lp - t->res->loads) : -1,
			      .bp = b ? (int32_t)(b - (*lp)->bps) : 0 };
	return b;
}

/* the marker mapping of jit-<pid>.dump in the process's maps */
static int find_marker(struct tr_state *t, char *path, size_t n)
{
	char mp[64], want[64], line[4608];
	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)t->pid);
	snprintf(want, sizeof(want), "/jit-%d.dump", (int)t->pid);
	FILE *f = fopen(mp, "re");
	if (!f)
		return -errno;
	int found = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *p = strchr(line, '/');
		size_t wl = strlen(want), pl = p ? strlen(p) : 0;
		if (p && pl >= wl && !strcmp(p + pl - wl, want) && pl < n) {
			memcpy(path, p, pl + 1);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

static int jd_open(struct tr_state *t)
{
	char path[4096];
	if (t->cfg->jitdump)
		snprintf(path, sizeof(path), "%s", t->cfg->jitdump);
	else if (find_marker(t, path, sizeof(path)))
		return -ENOENT;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	t->jdfd = fd;
	snprintf(t->res->jitdump, sizeof(t->res->jitdump), "%s", path);
	return 0;
}

/* read what was appended since the last poll */
static int jd_grow(struct tr_state *t)
{
	struct stat st;
	if (fstat(t->jdfd, &st) < 0)
		return -errno;
	size_t want = (size_t)st.st_size;
	if (want <= t->jdlen)
		return 0;
	if (want > t->jdcap) {
		size_t cap = t->jdcap ? t->jdcap : 65536;
		while (cap < want)
			cap *= 2;
		uint8_t *p = realloc(t->jd, cap);
		if (!p)
			return -ENOMEM;
		t->jd = p;
		t->jdcap = cap;
	}
	ssize_t r = pread(t->jdfd, t->jd + t->jdlen, want - t->jdlen, (off_t)t->jdlen);
	if (r < 0)
		return -errno;
	t->jdlen += (size_t)r;
	t->res->jd_read = t->jdlen;
	return 0;
}

static int add_bp(struct hx_trace_load *l, size_t *cap, uint64_t addr)
{
	if (l->nbps == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct hx_trace_bp *p = realloc(l->bps, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->bps = p;
		*cap = nc;
	}
	l->bps[l->nbps++] = (struct hx_trace_bp){ .addr = addr };
	return 0;
}

/* a breakpoint byte at a boundary that no site of ours holds: the program's
 * own, its original unknown, so none of ours goes there */
static int not_ours(struct tr_state *t, struct hx_trace_load *l, uint64_t addr)
{
	if (!l->foreign_bps++)
		fprintf(t->cfg->log, "trace: %s+0x%" PRIx64 ": a breakpoint instruction in memory that is not the "
			"tracer's: no breakpoint of ours there\n", l->name, addr - l->addr);
	return 0;
}

/* the boundaries of the code as it is in memory (capstone), breakpoints planted */
static int decode_plant(struct tr_state *t, struct hx_trace_load *l, const uint8_t *mem)
{
	csh cs;
	if (cs_open(t->cs_arch, t->cs_mode, &cs) != CS_ERR_OK)
		return -EINVAL;
	if (t->cs_syntax)
		cs_option(cs, CS_OPT_SYNTAX, (size_t)t->cs_syntax);
	cs_insn *insn = cs_malloc(cs);
	const uint8_t *code = mem;
	size_t left = l->size, cap = 0;
	uint64_t addr = l->addr;
	int e = 0;
	static const uint8_t zero8[8];
	while (left && !e) {
		uint64_t at = addr;
		/* eight zero bytes at a boundary decode as four `add %al,(%rax)`
		 * that no code runs: data (BeamAsm's codeHeader and the MFA of a
		 * CodeInfoPrologue decode so up to there when their first bytes
		 * happen to be an instruction) */
		if ((left >= 8 && !memcmp(code, zero8, 8)) || !cs_disasm_iter(cs, &code, &left, &addr, insn))
			break;
		e = add_bp(l, &cap, at);
		if (!e)
			snprintf(l->bps[l->nbps - 1].insn, sizeof(l->bps[0].insn), "%s%s%s", insn->mnemonic,
				 insn->op_str[0] ? " " : "", insn->op_str);
	}
	l->decoded = l->size - left;
	l->undecodable = left != 0;
	cs_free(insn, 1);
	cs_close(&cs);
	/* bytes that are not instructions: a load that holds data the program
	 * reads (BeamAsm's codeHeader and CodeInfoPrologue, HotSpot's constant
	 * stubs), where a breakpoint byte corrupts what it reads (Erlang died of
	 * SIGSEGV so): nothing of ours goes anywhere in it */
	if (l->undecodable) {
		t->res->undecodable++;
		return 0;
	}
	/* boundaries sampled only in the loads chosen (--only, --max-loads) while
	 * sampling goes on; every entry still starts activations: the truth of
	 * a chosen function's samples has the others' frames */
	const struct hx_trace_cfg *c = t->cfg;
	l->traced = !t->res->capped && (!c->only || !fnmatch(c->only, l->name, 0)) &&
		    (!c->max_loads || t->res->loads_traced < c->max_loads);
	t->res->loads_traced += l->traced;
	for (size_t i = 0; i < l->nbps && !e && l->traced; i++)
		if ((e = tr_bp_plant(t, &l->bps[i])) == -EEXIST) {
			l->bps[i].foreign = true;
			e = not_ours(t, l, l->bps[i].addr);
		}
	/* the entry: kept for the whole trace, it starts each activation */
	if (!e && l->nbps && !t->res->capped && (e = tr_entry_add(t, l->addr)) == -EEXIST)
		e = not_ours(t, l, l->addr);
	return e;
}

static void load_findings(struct tr_state *t, struct hx_trace_load *l)
{
	if (l->salted && t->res->salted == 1)
		fprintf(t->cfg->log, "trace: finding: %s at 0x%" PRIx64 ": the jitdump's copy of the code differs "
			"from memory only in its last %d bytes (from offset 0x%" PRIx64 "): a salt, not the code "
			"(perf's jitted ELF holds it); the code as in memory decoded; later loads salted so are "
			"counted in the report, not listed\n", l->name, l->addr, HX_TRACE_SALT, l->first_diff);
	else if (l->code_differs && !l->salted)
		fprintf(t->cfg->log, "trace: finding: %s at 0x%" PRIx64 ": the code in memory differs "
			"from the jitdump's from offset 0x%" PRIx64 "\n", l->name, l->addr, l->first_diff);
	if (l->dump_has_bp && !l->copied)
		fprintf(t->cfg->log, "trace: finding: %s: the jitdump's copy of the code holds the tracer's "
			"breakpoint at offset 0x%" PRIx64 " (the JIT copied its code from memory after it ran): the "
			"original kept by the tracer is used\n", l->name, l->dump_bp_off);
	if (l->undecodable && t->res->undecodable <= 3)
		fprintf(t->cfg->log, "trace: finding: %s: capstone cannot decode the code at offset 0x%" PRIx64 " of 0x%"
			PRIx64 ": not all code (data a breakpoint byte would corrupt): no breakpoint of ours in it%s\n",
			l->name, l->decoded, l->size,
			t->res->undecodable == 3 ? " (later loads so counted in the report, not listed)" : "");
}

/* the code as the process has it against the dump's copy: a difference is a
 * finding; the dump holding the tracer's breakpoint where it keeps the
 * original means the JIT copied its code from memory while traced */
static void dump_compare(struct tr_state *t, struct hx_trace_load *l, const uint8_t *mem, const uint8_t *dump)
{
	uint64_t last = 0;
	for (uint64_t i = 0; dump && i < l->size; i++) {
		if (mem[i] == dump[i])
			continue;
		struct tr_site *k = dump[i] == t->bp[0] ? tr_site_find(t, l->addr + i) : NULL;
		if ((k && k->orig[0] == mem[i]) || (l->copied && dump[i] == t->bp[0])) {
			if (!l->dump_has_bp) {
				l->dump_has_bp = true;
				l->dump_bp_off = i;
			}
		} else {
			if (!l->code_differs) {
				l->code_differs = true;
				l->first_diff = i;
			}
			last = i;
		}
	}
	/* a difference confined to the code's last bytes, in a load longer
	 * than them: the dump's copy salted there */
	l->salted = l->code_differs && l->size > HX_TRACE_SALT && l->first_diff >= l->size - HX_TRACE_SALT &&
		    last < l->size;
	t->res->salted += l->salted;
}

/* does mem (the new load's code) equal src's code with the tracer's bytes
 * taken out, except where src has a byte of ours in memory and mem holds
 * the breakpoint?  The positions so are set in ours[] */
static bool copy_of(struct tr_state *t, const struct hx_trace_load *src, const uint8_t *mem, uint64_t size,
		    uint8_t *orig, bool *ours)
{
	if (tr_mem_read(t, src->addr, orig, size))
		return false;
	size_t n = 0;
	for (uint64_t j = 0; j < size; j++) {
		struct tr_site *k = orig[j] == t->bp[0] ? tr_site_find(t, src->addr + j) : NULL;
		ours[j] = false;
		if (k && k->in_mem) {
			orig[j] = k->orig[0];
			if (mem[j] == t->bp[0] && mem[j] != orig[j]) {
				ours[j] = true;
				n++;
				continue;
			}
		}
		if (mem[j] != orig[j])
			return false;
	}
	return n > 0;
}

/* A JIT that makes new code by copying code of its own from memory (V8's
 * --interpreted-frames-native-stack copies InterpreterEntryTrampoline per
 * function: node 24 from the builtin's live bytes) copies the tracer's
 * breakpoints with it, to an address no site of ours knows: executed, the
 * program dies of SIGTRAP.  A new load whose entry holds the breakpoint
 * byte is compared with the loads of its size; the one it copies gives the
 * originals, written back.  Returns the bytes put back. */
static unsigned copy_repair(struct tr_state *t, struct hx_trace_load *l, uint8_t *mem)
{
	if (!l->size || mem[0] != t->bp[0] || tr_site_find(t, l->addr) || l->size > (1u << 20))
		return 0;
	uint8_t *orig = malloc(l->size);
	bool *ours = malloc(l->size * sizeof(bool));
	unsigned fixed = 0;
	for (size_t i = 0; orig && ours && i + 1 < t->res->nloads && !fixed; i++) {
		const struct hx_trace_load *src = &t->res->loads[i];
		if (src->closed || src->size != l->size || src->addr == l->addr || !copy_of(t, src, mem, l->size, orig, ours))
			continue;
		for (uint64_t j = 0; j < l->size; j++)
			if (ours[j] && !tr_mem_write(t, l->addr + j, &orig[j], 1)) {
				mem[j] = orig[j];
				fixed++;
			}
		if (++t->res->copies <= 3)
			fprintf(t->cfg->log, "trace: finding: %s at 0x%" PRIx64 ": its code is a copy of %s's taken from "
				"memory with %u of the tracer's breakpoint bytes in it (the JIT copies live code; its "
				"jitdump copy holds them too): the originals put back%s\n", l->name, l->addr, src->name,
				fixed, t->res->copies == 3 ? " (later copies counted in the report, not listed)" : "");
		l->copied = true;
	}
	free(orig);
	free(ours);
	return fixed;
}

static int on_load(struct tr_state *t, const struct jdr_rec *r)
{
	const struct jdr_load *ld = &r->u.load;
	struct hx_trace_result *res = t->res;
	struct hx_trace_load *p = realloc(res->loads, (res->nloads + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	res->loads = p;
	struct hx_trace_load *l = &p[res->nloads++];
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%.*s", (int)(ld->name ? ld->name_len : 0),
		 ld->name ? ld->name : "");
	l->addr = ld->code_addr;
	l->size = ld->code_size;
	l->index = ld->code_index;
	uint8_t *mem = malloc(l->size ? l->size : 1);
	if (!mem)
		return -ENOMEM;
	if (tr_mem_read(t, l->addr, mem, l->size)) {
		fprintf(t->cfg->log, "trace: %s at 0x%" PRIx64 " (jitdump offset %" PRIu64 "): its code "
			"cannot be read from the process: no breakpoints\n", l->name, l->addr, r->off);
		free(mem);
		l->closed = true;
		t->lgen++;
		return 0;
	}
	tr_site_unplant(t, l->addr, mem, l->size);   /* code that ran before it was announced */
	copy_repair(t, l, mem);
	dump_compare(t, l, mem, ld->code);
	int e = decode_plant(t, l, mem);
	t->lgen++;                  /* its boundaries now answer tr_bp_find */
	tr_act_late(t, res->nloads - 1);
	free(mem);
	load_findings(t, l);
	return e;
}

/* CODE_MOVE / CODE_CLOSE: that load's breakpoints go */
static void on_gone(struct tr_state *t, uint64_t addr, const char *what)
{
	for (size_t i = 0; i < t->res->nloads; i++) {
		struct hx_trace_load *l = &t->res->loads[i];
		if (l->closed || l->addr != addr)
			continue;
		struct tr_site *k = tr_site_find(t, l->addr);
		if (k)
			k->entry = false;
		for (size_t j = 0; j < l->nbps; j++)
			tr_bp_remove(t, &l->bps[j]);
		l->closed = true;
		t->lgen++;
		if (k)
			tr_site_sync(t, k);
		fprintf(t->cfg->log, "trace: %s of %s at 0x%" PRIx64 ": its breakpoints removed\n",
			what, l->name, addr);
	}
}

static int jd_records(struct tr_state *t)
{
	struct jdr_iter it;
	struct ju_err err;
	if (jdr_init(&it, t->jd, t->jdlen, &err) < 0) {
		if (err.kind == JDR_SHORT_HEADER)
			return 0;                       /* not all written yet */
		char m[256];
		snprintf(m, sizeof(m), "%s", err.msg);
		snprintf(t->res->why, sizeof(t->res->why), "%s: %s", t->res->jitdump, m);
		t->jd_bad = true;
		return -EBADMSG;
	}
	if (t->jdoff)
		it.off = t->jdoff;
	it.nrecs = t->res->nrecs;
	struct jdr_rec r;
	int e = 0;
	while (!e && jdr_next(&it, &r, &err) == 1) {
		if (r.id == JD_CODE_LOAD && !r.short_fixed)
			e = on_load(t, &r);
		else if (r.id == JD_CODE_MOVE && !r.short_fixed)
			on_gone(t, r.u.move.old_code_addr, "CODE_MOVE");
		else if (r.id == JD_CODE_CLOSE)
			tr_bp_remove_all(t);
		t->jdoff = it.off;
		t->res->nrecs = it.nrecs;
	}
	if (!t->jdoff)
		t->jdoff = it.off;
	return e;
}

int tr_jd_poll(struct tr_state *t)
{
	if (t->jd_bad)
		return 0;
	if (t->jdfd < 0 && jd_open(t))
		return 0;
	int e = jd_grow(t);
	if (e)
		return e;
	return jd_records(t);
}

/* the end of the trace: what the JIT wrote last read, the bytes of the
 * whole records kept for the judging (res->jd_bytes up to jd_end).  A last
 * record not wholly written (a JIT killed mid-write, a trace ended while it
 * wrote) ends the dump where it ends, named with its offset; a record that
 * is not one is a bad jitdump (-EBADMSG, why set). */
int tr_jd_finish(struct tr_state *t)
{
	if (t->jdfd < 0 || t->jd_bad)
		return 0;
	int e = tr_jd_poll(t);
	if (e)
		return e;
	struct hx_trace_result *res = t->res;
	res->jd_end = t->jdoff;
	if (t->jdoff && t->jdoff < t->jdlen) {
		struct jdr_iter it;
		struct jdr_rec r;
		struct ju_err err;
		if (jdr_init(&it, t->jd, t->jdlen, &err) == 0) {
			it.off = t->jdoff;
			if (jdr_next(&it, &r, &err) < 0 && err.kind != JDR_PAST_END && err.kind != JDR_PREFIX_TRUNCATED) {
				snprintf(res->why, sizeof(res->why), "%s: offset 0x%" PRIx64 ": %s", res->jitdump,
					 (uint64_t)err.offset, err.msg);
				t->jd_bad = true;
				return -EBADMSG;
			}
		}
		res->jd_half = true;
		fprintf(t->cfg->log, "trace: %s ends in a record not wholly written at offset 0x%" PRIx64 " (%" PRIu64
			" bytes of it): the dump is read up to there\n", res->jitdump, t->jdoff, t->jdlen - t->jdoff);
	}
	res->jd_bytes = t->jd;
	t->jd = NULL;
	return 0;
}
