/* perf's view of JIT code (facts section 2): the jitted-<pid>-<index>.so that
 * `perf inject -j` writes for each CODE_LOAD (tools/perf/util/genelf.c), the
 * MMAP2 it injects for it (jitdump.c: jit_repipe_code_load), the executable
 * file maps of the process, and perf's map tree rules over all of them.
 *
 * Generations (read in torvalds/linux and the stable queues):
 *  5.x-0x40  v6.0 and 5.x stable trees with "perf jit: Include program header
 *            in ELF files" (babd04386b1d) but not "perf inject: Fix
 *            GEN_ELF_TEXT_OFFSET for jit" (89b15d00527b): libelf lays .text out
 *            after the new Phdr at file offset 0x80, yet GEN_ELF_TEXT_OFFSET is
 *            still sizeof(Ehdr) = 0x40 for sh_addr, the symbol, e_entry,
 *            .eh_frame's address and the MMAP2 pgoff; PT_LOAD at 0.
 *  v6.1      v6.1-v6.7: GEN_ELF_TEXT_OFFSET = 0x80 everywhere, PT_LOAD still
 *            at p_offset = p_vaddr = 0.
 *  5.10.y    Debian 11's perf 5.10.223, read off its `perf inject -j` output
 *            and its chains (the perf column): the 5.x-0x40 text offset with
 *            PT_LOAD at p_offset = p_vaddr = 0x40 (a partial backport of
 *            1af478903fc4), and the libunwind lookup from before "perf unwind:
 *            Fix segbase for ld.lld linked objects" (v6.0): segbase = map start
 *            - pgoff + .eh_frame_hdr's sh_offset, 0x40 past the header here.
 *  current   v6.8+ ("perf genelf: Set ELF program header addresses properly",
 *            1af478903fc4) and stable trees with it (Debian 12's 6.1.y):
 *            PT_LOAD at 0x80. */
#include "arches.h"
#include "unwinders/model/perfview.h"
#include "unwinders/model/maptree.h"
#include "unwinders/model/files.h"
#include "unwinders/uwarch.h"
#include "unwinders/view.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PV_MAX_FILE (1ull << 30)       /* larger mapped files are not read */
#define PV_MAX_MAPS (1u << 22)
#define PV_MAX_SECTIONS 65536u
#define PV_MAX_SYMS (1u << 22)
#define PV_MAX_PHDRS 4096u

static const struct {
	const char *name;
	uint64_t text_addr;   /* GEN_ELF_TEXT_OFFSET of that generation */
	bool load_at_text;    /* PT_LOAD p_offset = p_vaddr = text_addr (else 0) */
} pv_profiles[] = {
	[PV_CURRENT] = { "current", 0x80, true },
	[PV_V61] = { "v6.1", 0x80, false },
	[PV_5X_0X40] = { "5.x-0x40", 0x40, false },
	[PV_510] = { "5.10.y", 0x40, true },
};
#define PV_NPROFILES (sizeof(pv_profiles) / sizeof(pv_profiles[0]))

static bool valid_profile(enum pv_profile p)
{
	return (unsigned)p < PV_NPROFILES;
}

const char *pv_profile_name(enum pv_profile p)
{
	return valid_profile(p) ? pv_profiles[p].name : "?";
}

const char *pv_profile_choices(void)
{
	static char buf[128];
	if (!buf[0]) {
		size_t off = 0;
		for (size_t i = 0; i < PV_NPROFILES && off < sizeof(buf); i++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i == 0 ? "" :
						i + 1 == PV_NPROFILES ? " or " : ", ", pv_profiles[i].name);
	}
	return buf;
}

int pv_profile_parse(const char *s, enum pv_profile *p)
{
	for (size_t i = 0; s && i < PV_NPROFILES; i++)
		if (!strcmp(s, pv_profiles[i].name)) {
			*p = (enum pv_profile)i;
			return 0;
		}
	return -EINVAL;
}

uint64_t pv_text_addr(enum pv_profile p)
{
	return valid_profile(p) ? pv_profiles[p].text_addr : 0x80;
}

uint64_t pv_load_vaddr(enum pv_profile p)
{
	return valid_profile(p) && pv_profiles[p].load_at_text ? pv_profiles[p].text_addr : 0;
}

int pv_jitted_path(char *buf, size_t len, const char *dir, const struct jd_load *l)
{
	int n = snprintf(buf, len, "%s/jitted-%d-%" PRIu64 ".so", dir, (int)l->pid, l->code_index);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* ---- SHA-1 (FIPS 180-4), for the build-id note ---- */

void pv_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
	       const struct pv_unwind_sizes *u, struct pv_layout *out)
{
	memset(out, 0, sizeof(*out));
	/* section addresses and the MMAP2 pgoff follow GEN_ELF_TEXT_OFFSET of the
	 * generation; libelf lays .text (sh_addralign 16) out after the Ehdr and
	 * the one Phdr, at file offset 0x80, in all of them */
	out->text_addr = pv_text_addr(prof);
	out->text_size = code_size;
	out->text_off = align_up(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), 16);
	out->has_unwind = u != NULL;
	if (u) {
		/* perf reads .eh_frame first, then the header (facts section 1) */
		uint64_t hs = u->eh_frame_hdr_size <= u->unwinding_size ? u->eh_frame_hdr_size : 0;
		out->eh_addr = align_up(out->text_addr + code_size, 8);
		out->eh_size = u->unwinding_size - hs;
		out->hdr_addr = out->eh_addr + out->eh_size;
		out->hdr_size = hs;
		out->eh_off = align_up(out->text_off + code_size, 8);
		out->hdr_off = align_up(out->eh_off + out->eh_size, 4);
	}
	out->load_offset = out->load_vaddr = pv_load_vaddr(prof);
	out->load_size = code_size;
	/* jit_repipe_code_load: len = mapped_size ? ALIGN_8(csize) + mapped_size : csize */
	out->map_start = code_addr;
	out->map_pgoff = out->text_addr;
	uint64_t ms = u ? u->mapped_size : 0;
	out->map_len = ms ? align_up(code_size, 8) + ms : code_size;
	uint64_t base = code_addr - out->map_pgoff;
	out->rt_text = base + out->text_addr;
	out->rt_eh = base + out->eh_addr;
	out->rt_hdr = base + out->hdr_addr;
	/* the PT_LOAD's vaddr (0x80 or 0) rounds down to 0 on any page size */
	out->lu_base = prof == PV_V61 ? code_addr : base;
	/* 5.10.y: segbase = base + sh_offset, i.e. base + sh_addr + (offset - addr) */
	if (prof == PV_510 && u)
		out->lu_base = base + (out->hdr_off - out->hdr_addr);
	/* the /tmp/jitted- rule of libdw is v6.8's */
	out->dw_base_tmp = prof == PV_V61 || prof == PV_510 ? base : code_addr;
	out->dw_base_other = base;
}

void pv_layout_load(enum pv_profile prof, const struct jd_load *l, struct pv_layout *out)
{
	struct pv_unwind_sizes u = { l->unwinding_size, l->eh_frame_hdr_size, l->mapped_size };
	pv_layout(prof, l->code_addr, l->code_size, l->has_unwind ? &u : NULL, out);
}

static uint32_t rol32(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		uint32_t t = rol32(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol32(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

static void sha1(const uint8_t *data, size_t n, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	size_t full = n / 64, rem = n % 64;
	for (size_t i = 0; i < full; i++)
		sha1_block(h, data + 64 * i);
	uint8_t tail[128] = { 0 };
	if (rem)
		memcpy(tail, data + 64 * full, rem);
	tail[rem] = 0x80;
	size_t tlen = rem < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)n * 8;
	for (int i = 0; i < 8; i++)
		tail[tlen - 1 - (size_t)i] = (uint8_t)(bits >> (8 * i));
	sha1_block(h, tail);
	if (tlen == 128)
		sha1_block(h, tail + 64);
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (uint8_t)(h[i] >> (24 - 8 * j));
}

/* ---- the jitted ELF (genelf's layout) ---- */

static void put32le(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A string table built with a cursor; each name's offset is taken as written. */
struct pv_strtab {
	char buf[192];
	size_t len;
};

static uint32_t strtab_add(struct pv_strtab *t, const char *s)
{
	size_t n = strlen(s) + 1;
	if (t->len + n > sizeof(t->buf))
		return 0;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	return (uint32_t)(t->len - n);
}

struct pv_scn {
	uint32_t name;
	uint32_t type;
	uint64_t flags, addr, align, entsize;
	uint32_t link;
	const void *data;
	uint64_t size;
	Elf_Type dtype;
	uint64_t offset;      /* filled by the layout */
};

/* elf_update would fail half-written: say which step and why. */
static int elf_fail(char *err, size_t errlen, const char *path, const char *what)
{
	snprintf(err, errlen, "%s: %s: %s", path, what, elf_errmsg(-1));
	return -EIO;
}

/* What genelf would refuse or misread (its sizes are ints). */
static int elf_check(const char *path, enum pv_profile prof, const struct jd_load *l, char *err, size_t errlen)
{
	if (!valid_profile(prof)) {
		snprintf(err, errlen, "%s: unknown perf profile %d", path, (int)prof);
		return -EINVAL;
	}
	/* genelf takes csize as an int */
	if (l->code_size > INT_MAX || (l->code_size && !l->code)) {
		snprintf(err, errlen, "%s: CODE_LOAD at jitdump offset 0x%" PRIx64 ": code_size 0x%" PRIx64
			 " is more than perf's genelf accepts", path, l->file_off, l->code_size);
		return -ERANGE;
	}
	if (l->has_unwind && (l->eh_frame_hdr_size > l->unwinding_size ||
			      l->unwinding_size > INT_MAX || (l->unwinding_size && !l->unwind))) {
		snprintf(err, errlen, "%s: UNWINDING_INFO at jitdump offset 0x%" PRIx64
			 ": eh_frame_hdr_size 0x%" PRIx64 " / unwinding_size 0x%" PRIx64 " unusable",
			 path, l->unwind_file_off, l->eh_frame_hdr_size, l->unwinding_size);
		return -EINVAL;
	}
	return 0;
}

/* The sections genelf writes, in its order, with their contents. */
struct pv_elf {
	struct pv_strtab shs;
	char *strsym;             /* .strtab: "" then the load's name (owned) */
	size_t strsym_len;
	Elf64_Sym syms[2];
	uint8_t note[12 + 4 + 20];
	struct pv_scn scn[8];
	size_t ns, shstrndx;
	uint64_t shoff;
};

static int elf_sections(struct pv_elf *x, const struct jd_load *l, const struct pv_layout *ly)
{
	/* genelf's table also names the .debug_* sections CODE_DEBUG_INFO adds;
	 * keep them so .shstrtab has perf's size and order */
	strtab_add(&x->shs, "");
	uint32_t n_text = strtab_add(&x->shs, ".text");
	uint32_t n_shstrtab = strtab_add(&x->shs, ".shstrtab");
	uint32_t n_symtab = strtab_add(&x->shs, ".symtab");
	uint32_t n_strtab = strtab_add(&x->shs, ".strtab");
	uint32_t n_note = strtab_add(&x->shs, ".note.gnu.build-id");
	strtab_add(&x->shs, ".debug_line");
	strtab_add(&x->shs, ".debug_info");
	strtab_add(&x->shs, ".debug_abbrev");
	uint32_t n_ehhdr = strtab_add(&x->shs, ".eh_frame_hdr");
	uint32_t n_eh = strtab_add(&x->shs, ".eh_frame");

	size_t namelen = l->name ? strlen(l->name) : 0;
	x->strsym = calloc(1, namelen + 2);
	if (!x->strsym)
		return -ENOMEM;
	if (namelen)
		memcpy(x->strsym + 1, l->name, namelen);
	x->strsym_len = namelen + 2;

	/* symbol 0 undefined; symbol 1 the code: LOCAL FUNC in section 1 */
	x->syms[1].st_name = 1;
	x->syms[1].st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC);
	x->syms[1].st_shndx = 1;
	x->syms[1].st_value = ly->text_addr;
	x->syms[1].st_size = ly->text_size;

	/* NT_GNU_BUILD_ID note: namesz, descsz, type, "GNU\0", SHA-1 of the code */
	put32le(x->note, 4);
	put32le(x->note + 4, 20);
	put32le(x->note + 8, NT_GNU_BUILD_ID);
	memcpy(x->note + 12, "GNU", 4);
	sha1(l->code, (size_t)ly->text_size, x->note + 16);

	struct pv_scn *scn = x->scn;
	size_t ns = 0;
	scn[ns++] = (struct pv_scn){ .name = n_text, .type = SHT_PROGBITS,
		.flags = SHF_ALLOC | SHF_EXECINSTR, .addr = ly->text_addr, .align = 16,
		.data = l->code, .size = ly->text_size, .dtype = ELF_T_BYTE, .offset = ly->text_off };
	if (ly->has_unwind) {
		scn[ns++] = (struct pv_scn){ .name = n_eh, .type = SHT_PROGBITS, .flags = SHF_ALLOC,
			.addr = ly->eh_addr, .align = 8, .data = l->unwind, .size = ly->eh_size,
			.dtype = ELF_T_BYTE, .offset = ly->eh_off };
		scn[ns++] = (struct pv_scn){ .name = n_ehhdr, .type = SHT_PROGBITS, .flags = SHF_ALLOC,
			.addr = ly->hdr_addr, .align = 4, .data = l->unwind ? l->unwind + ly->eh_size : NULL,
			.size = ly->hdr_size, .dtype = ELF_T_BYTE, .offset = ly->hdr_off };
	}
	size_t placed = ns;
	x->shstrndx = ns + 1;
	scn[ns++] = (struct pv_scn){ .name = n_shstrtab, .type = SHT_STRTAB, .align = 1,
		.data = x->shs.buf, .size = x->shs.len, .dtype = ELF_T_BYTE };
	size_t strtabndx = ns + 2;
	/* genelf leaves sh_info 0 (readelf warns about it: so does perf's file) */
	scn[ns++] = (struct pv_scn){ .name = n_symtab, .type = SHT_SYMTAB, .align = 8,
		.entsize = sizeof(Elf64_Sym), .link = (uint32_t)strtabndx,
		.data = x->syms, .size = sizeof(x->syms), .dtype = ELF_T_SYM };
	scn[ns++] = (struct pv_scn){ .name = n_strtab, .type = SHT_STRTAB, .align = 1,
		.data = x->strsym, .size = x->strsym_len, .dtype = ELF_T_BYTE };
	scn[ns++] = (struct pv_scn){ .name = n_note, .type = SHT_NOTE, .flags = SHF_ALLOC,
		.align = 4, .data = x->note, .size = sizeof(x->note), .dtype = ELF_T_BYTE };
	x->ns = ns;
	/* the rest as libelf lays them out for genelf: each section at its
	 * alignment after the ones pv_layout placed, then the section headers on 8 */
	uint64_t off = scn[placed - 1].offset + scn[placed - 1].size;
	for (size_t i = placed; i < ns; i++) {
		off = align_up(off, scn[i].align);
		scn[i].offset = off;
		off += scn[i].size;
	}
	x->shoff = align_up(off, 8);
	return 0;
}

static int elf_add_sections(Elf *e, const struct pv_elf *x, const char *path, char *err, size_t errlen)
{
	for (size_t i = 0; i < x->ns; i++) {
		const struct pv_scn *c = &x->scn[i];
		Elf_Scn *s = elf_newscn(e);
		Elf_Data *d = s ? elf_newdata(s) : NULL;
		Elf64_Shdr *sh = s ? elf64_getshdr(s) : NULL;
		if (!d || !sh)
			return elf_fail(err, errlen, path, "elf_newscn");
		/* libelf only reads d_buf when writing */
		d->d_buf = (void *)(uintptr_t)c->data;
		d->d_size = (size_t)c->size;
		d->d_off = 0;
		d->d_align = (size_t)c->align;
		d->d_type = c->dtype;
		d->d_version = EV_CURRENT;
		sh->sh_name = c->name;
		sh->sh_type = c->type;
		sh->sh_flags = c->flags;
		sh->sh_addr = c->addr;
		sh->sh_offset = c->offset;
		sh->sh_size = c->size;
		sh->sh_link = c->link;
		sh->sh_info = 0;
		sh->sh_addralign = c->align;
		sh->sh_entsize = c->entsize;
	}
	return 0;
}

/* Ehdr, the one PT_LOAD, the sections, written by libelf at our offsets. */
static int elf_emit(Elf *e, const struct pv_elf *x, const struct pv_layout *ly, uint16_t elf_mach,
		    const char *path, char *err, size_t errlen)
{
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	if (!eh)
		return elf_fail(err, errlen, path, "elf64_newehdr");
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	const struct arch_facts *host = arch_facts_host();
	eh->e_machine = elf_mach ? elf_mach : host ? host->elf_mach : EM_NONE;   /* genelf: perf's own */
	eh->e_version = EV_CURRENT;
	eh->e_entry = ly->text_addr;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = x->shoff;
	eh->e_shstrndx = (Elf64_Half)x->shstrndx;
	Elf64_Phdr *ph = elf64_newphdr(e, 1);
	if (!ph)
		return elf_fail(err, errlen, path, "elf64_newphdr");
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = ly->load_offset;
	ph->p_vaddr = ly->load_vaddr;
	ph->p_paddr = ly->load_vaddr;
	ph->p_filesz = ly->load_size;
	ph->p_memsz = ly->load_size;
	ph->p_align = 8;
	int rc = elf_add_sections(e, x, path, err, errlen);
	if (rc)
		return rc;
	if (elf_update(e, ELF_C_WRITE) < 0)
		return elf_fail(err, errlen, path, "elf_update");
	return 0;
}

int pv_write_jitted_elf(const char *path, enum pv_profile prof, const struct jd_load *l,
			uint16_t elf_mach, char *err, size_t errlen)
{
	int rc = elf_check(path, prof, l, err, errlen);
	if (rc)
		return rc;
	struct pv_layout ly;
	pv_layout_load(prof, l, &ly);
	struct pv_elf x;
	memset(&x, 0, sizeof(x));
	if (elf_sections(&x, l, &ly)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(x.strsym);
		return elf_fail(err, errlen, path, "libelf initialisation");
	}
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot create: %s", path, strerror(e));
		free(x.strsym);
		return -e;
	}
	rc = -EIO;
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!e)
		elf_fail(err, errlen, path, "elf_begin");
	else
		rc = elf_emit(e, &x, &ly, elf_mach, path, err, errlen);
	if (e)
		elf_end(e);
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: close: %s", path, strerror(-rc));
	}
	if (rc)
		unlink(path);
	free(x.strsym);
	return rc;
}

/* ---- reading a DSO back, by section name as perf does ---- */

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > PV_MAX_FILE) {
		close(fd);
		return -EINVAL;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -EIO;
			free(buf);
			close(fd);
			return e;
		}
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*size = got;
	return 0;
}

struct pv_rawsym {            /* a candidate before duplicates are folded */
	struct pv_sym s;
	uint64_t size;
	unsigned char type, bind;
	size_t order;
};

static int rawsym_cmp(const void *a, const void *b)
{
	const struct pv_rawsym *x = a, *y = b;
	if (x->s.start != y->s.start)
		return x->s.start < y->s.start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_' && n < 64)
		n++;
	return n;
}

/* perf's choose_best_symbol: sized, then typed (upstream 2025), then not
 * weak, then global, then fewer leading underscores, then the longer name;
 * true if a beats b. */
static bool sym_better(const struct pv_rawsym *a, const struct pv_rawsym *b)
{
	if ((a->size != 0) != (b->size != 0))
		return a->size != 0;
	if ((a->type == STT_NOTYPE) != (b->type == STT_NOTYPE))
		return b->type == STT_NOTYPE;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind != STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	size_t ua = leading_underscores(a->s.name), ub = leading_underscores(b->s.name);
	if (ua != ub)
		return ua < ub;
	return strlen(a->s.name) > strlen(b->s.name);
}

/* The PT_LOAD holding vaddr (perf's elf_read_program_header). */
static bool load_for_vaddr(Elf *e, size_t phnum, uint64_t vaddr, GElf_Phdr *out)
{
	for (size_t i = 0; i < phnum && i < PV_MAX_PHDRS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t sz = ph.p_memsz > ph.p_filesz ? ph.p_memsz : ph.p_filesz;
		if (sz && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < sz) {
			*out = ph;
			return true;
		}
	}
	return false;
}

/* Symbols of one table (.symtab or .dynsym), turned into file offsets as perf
 * does for user DSOs (dso__load_sym: adjust_symbols is always set for them):
 * st_value - (p_vaddr - p_offset) of the PT_LOAD holding it, else
 * st_value - (sh_addr - sh_offset) of its section. */
static int load_symtab(struct pv_dso *d, Elf *e, Elf_Scn *symscn, const GElf_Shdr *symsh,
		       size_t shstrndx, size_t phnum, struct pv_rawsym **raw, size_t *nraw,
		       size_t *cap)
{
	if (symsh->sh_entsize != sizeof(Elf64_Sym) && symsh->sh_entsize != sizeof(Elf32_Sym))
		return 0;
	Elf_Data *data = elf_getdata(symscn, NULL);
	Elf_Scn *strscn = elf_getscn(e, symsh->sh_link);
	GElf_Shdr strsh;
	if (!data || !strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type == SHT_NOBITS ||
	    strsh.sh_offset > d->size || strsh.sh_size > d->size - strsh.sh_offset)
		return 0;
	const char *strs = (const char *)d->image + strsh.sh_offset;
	size_t n = data->d_size / symsh->sh_entsize;
	for (size_t i = 1; i < n && i < PV_MAX_SYMS; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		unsigned type = GELF_ST_TYPE(sym.st_info);
		if (!sym.st_name || sym.st_name >= strsh.sh_size || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE)
			continue;
		if (!memchr(strs + sym.st_name, 0, strsh.sh_size - sym.st_name))
			continue;
		Elf_Scn *sec = elf_getscn(e, sym.st_shndx);
		GElf_Shdr sh;
		if (!sec || !gelf_getshdr(sec, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		/* functions; untyped labels only inside text sections (elf_sec__is_text) */
		if (type == STT_NOTYPE) {
			const char *secname = elf_strptr(e, shstrndx, sh.sh_name);
			if (!secname || !strstr(secname, "text"))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		uint64_t v = sym.st_value;
		GElf_Phdr ph;
		if (load_for_vaddr(e, phnum, v, &ph))
			v -= ph.p_vaddr - ph.p_offset;
		else
			v -= sh.sh_addr - sh.sh_offset;
		if (*nraw == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct pv_rawsym *r = realloc(*raw, nc * sizeof(*r));
			if (!r)
				return -ENOMEM;
			*raw = r;
			*cap = nc;
		}
		struct pv_rawsym *r = &(*raw)[(*nraw)++];
		r->s.start = v;
		r->s.end = v + sym.st_size;
		r->s.name = strs + sym.st_name;
		r->size = sym.st_size;
		r->type = (unsigned char)type;
		r->bind = (unsigned char)GELF_ST_BIND(sym.st_info);
		r->order = *nraw;
	}
	return 0;
}

/* Fold duplicates (perf's symbols__fixup_duplicate) and give zero-sized
 * symbols the next one's start as end (symbols__fixup_end). */
static int finish_syms(struct pv_dso *d, struct pv_rawsym *raw, size_t nraw)
{
	if (!nraw)
		return 0;
	qsort(raw, nraw, sizeof(*raw), rawsym_cmp);
	d->syms = malloc(nraw * sizeof(*d->syms));
	if (!d->syms)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < nraw; i++) {
		size_t best = i;
		while (i + 1 < nraw && raw[i + 1].s.start == raw[best].s.start) {
			i++;
			if (sym_better(&raw[i], &raw[best]))
				best = i;
		}
		d->syms[n++] = raw[best].s;
	}
	for (size_t i = 0; i < n; i++) {
		if (d->syms[i].end != d->syms[i].start)
			continue;
		d->syms[i].end = i + 1 < n ? d->syms[i + 1].start
					   : align_up(d->syms[i].start + 1, 4096) + 4096;
	}
	d->nsyms = n;
	return 0;
}

/* Fill the section fields and the symbols from d->image.  A file that is not
 * an ELF stays a DSO without them (perf keeps such maps too). */
static int scan_dso(struct pv_dso *d, char *err, size_t errlen)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EIO;
	}
	Elf *e = elf_memory((char *)(uintptr_t)d->image, d->size);
	if (!e)
		return 0;
	GElf_Ehdr ehdr;
	size_t shstrndx = 0, phnum = 0;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr) || elf_getshdrstrndx(e, &shstrndx) ||
	    elf_getphdrnum(e, &phnum)) {
		elf_end(e);
		return 0;
	}
	d->is_elf = true;
	for (size_t i = 0; i < phnum && i < PV_MAX_PHDRS; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			d->has_first_load = true;
			d->first_load_vaddr = ph.p_vaddr;
			d->first_load_offset = ph.p_offset;
			break;
		}
	}
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symsh = { 0 }, dynsh = { 0 };
	size_t guard = 0;
	/* the first section of each name wins, as in perf's elf_section_by_name */
	while ((scn = elf_nextscn(e, scn)) && guard++ < PV_MAX_SECTIONS) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		bool in_file = sh.sh_type != SHT_NOBITS && sh.sh_offset <= d->size &&
			       sh.sh_size <= d->size - sh.sh_offset;
		if (!strcmp(name, ".eh_frame_hdr") && !d->has_eh_frame_hdr && in_file) {
			d->has_eh_frame_hdr = true;
			d->eh_frame_hdr_addr = sh.sh_addr;
			d->eh_frame_hdr_off = sh.sh_offset;
			d->eh_frame_hdr_size = sh.sh_size;
		} else if (!strcmp(name, ".eh_frame") && !d->has_eh_frame && in_file) {
			d->has_eh_frame = true;
			d->eh_frame_addr = sh.sh_addr;
			d->eh_frame_off = sh.sh_offset;
			d->eh_frame_size = sh.sh_size;
		} else if (!strcmp(name, ".symtab") && !symtab && sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symsh = sh;
		} else if (!strcmp(name, ".dynsym") && !dynsym && sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsh = sh;
		}
	}
	/* perf loads .symtab, then .dynsym too (dso__load_sym) */
	struct pv_rawsym *raw = NULL;
	size_t nraw = 0, cap = 0;
	int rc = 0;
	if (symtab)
		rc = load_symtab(d, e, symtab, &symsh, shstrndx, phnum, &raw, &nraw, &cap);
	if (!rc && dynsym)
		rc = load_symtab(d, e, dynsym, &dynsh, shstrndx, phnum, &raw, &nraw, &cap);
	if (!rc)
		rc = finish_syms(d, raw, nraw);
	free(raw);
	elf_end(e);
	if (rc) {
		snprintf(err, errlen, "%s: symbols: %s", d->path, strerror(-rc));
		return rc;
	}
	return 0;
}

static void dso_clear(struct pv_dso *d)
{
	if (d->file)
		uw_file_put(d->file);
	else
		free((void *)(uintptr_t)d->image);
	if (!d->syms_shared)
		free(d->syms);
	d->file = NULL;
	d->image = NULL;
	d->syms = NULL;
	d->syms_shared = false;
	d->size = 0;
	d->nsyms = 0;
	d->is_elf = d->has_first_load = false;
	d->has_eh_frame = d->has_eh_frame_hdr = false;
	d->eh_frame_hdr_addr = d->eh_frame_hdr_off = d->eh_frame_hdr_size = 0;
	d->eh_frame_addr = d->eh_frame_off = d->eh_frame_size = 0;
	d->first_load_vaddr = d->first_load_offset = 0;
}

static void scan_free(void *p)
{
	struct pv_dso *x = p;
	free(x->syms);
	free(x);
}

/* A file of the process maps, mapped once per run (files.h) and scanned once:
 * d gets the file's data and shares its symbols.  Gone, too large or not an
 * ELF (the jitdump marker, locale archives): a DSO without data, as in perf. */
static int dso_load_mapped(struct pv_dso *d, char *err, size_t errlen)
{
	const struct uw_file *f;
	if (uw_file_get(d->path, &f))
		return 0;
	if (f->size > PV_MAX_FILE || f->size < SELFMAG || memcmp(f->data, ELFMAG, SELFMAG)) {
		uw_file_put(f);
		return 0;
	}
	const struct pv_dso *x = uw_file_derived(f, UW_FILE_PV_SCAN, 0);
	if (!x) {
		struct pv_dso *n = calloc(1, sizeof(*n));
		if (!n) {
			uw_file_put(f);
			snprintf(err, errlen, "%s: out of memory", d->path);
			return -ENOMEM;
		}
		snprintf(n->path, sizeof(n->path), "%s", d->path);
		n->image = f->data;
		n->size = f->size;
		int rc = scan_dso(n, err, errlen);
		if (rc) {
			scan_free(n);
			uw_file_put(f);
			return rc;
		}
		x = uw_file_set_derived(f, UW_FILE_PV_SCAN, 0, n, scan_free);
		if (!x) {
			uw_file_put(f);
			snprintf(err, errlen, "%s: out of memory", d->path);
			return -ENOMEM;
		}
	}
	char path[sizeof(d->path)];
	memcpy(path, d->path, sizeof(path));
	char *perf_name = d->perf_name;
	bool jitted = d->jitted;
	const struct jd_load *load = d->load;
	*d = *x;
	memcpy(d->path, path, sizeof(path));
	d->perf_name = perf_name;
	d->jitted = jitted;
	d->load = load;
	d->file = f;
	d->syms_shared = true;
	return 0;
}

/* Read the file behind d (again) and scan it.  mapped: a file of the process
 * maps (dso_load_mapped); else a jitted file this view wrote, read into memory
 * (it may be written again while this view lives). */
static int dso_load(struct pv_dso *d, bool mapped, char *err, size_t errlen)
{
	dso_clear(d);
	if (mapped)
		return dso_load_mapped(d, err, errlen);
	uint8_t *image = NULL;
	int rc = read_file(d->path, &image, &d->size);
	if (rc) {
		snprintf(err, errlen, "%s: cannot read back: %s", d->path, strerror(-rc));
		return rc;
	}
	d->image = image;
	return scan_dso(d, err, errlen);
}

/* ---- perf's map tree for the pid ---- */

struct pv_builder {
	struct pv_view *pv;
	size_t cap_dsos, cap_maps;
	const char *dump_dir;       /* where perf takes the jitdump to be; NULL: its own path */
};

static struct pv_dso *find_file_dso(struct pv_view *pv, const char *path)
{
	for (size_t i = 0; i < pv->ndsos; i++)
		if (!pv->dsos[i].jitted && !strcmp(pv->dsos[i].path, path))
			return &pv->dsos[i];
	return NULL;
}

/* The jitted file's name is a function of (pid, code_index): compare those. */
static struct pv_dso *find_jitted_dso(struct pv_view *pv, const struct jd_load *l)
{
	for (size_t i = pv->ndsos; i-- > 0;) {
		const struct pv_dso *d = &pv->dsos[i];
		if (d->jitted && d->load->code_index == l->code_index && d->load->pid == l->pid)
			return &pv->dsos[i];
	}
	return NULL;
}

/* First map whose end lies above addr (maps are sorted and disjoint, so ends are too). */
static size_t first_ending_after(const struct pv_view *pv, uint64_t addr)
{
	size_t lo = 0, hi = pv->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pv->maps[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Insert nm; earlier maps it overlaps keep what perf's cut leaves of them (mt_cut). */
static int insert_map(struct pv_builder *b, const struct pv_map *nm, char *err, size_t errlen)
{
	struct pv_view *pv = b->pv;
	if (nm->end <= nm->start)
		return 0;
	if (pv->nmaps + 3 > PV_MAX_MAPS) {
		snprintf(err, errlen, "more than %u maps", PV_MAX_MAPS);
		return -ERANGE;
	}
	if (pv->nmaps + 3 > b->cap_maps) {
		size_t nc = b->cap_maps ? b->cap_maps * 2 : 64;
		struct pv_map *m = realloc(pv->maps, nc * sizeof(*m));
		if (!m) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		pv->maps = m;
		b->cap_maps = nc;
	}
	size_t i = first_ending_after(pv, nm->start), j = i;
	while (j < pv->nmaps && pv->maps[j].start < nm->end)
		j++;
	/* maps [i, j) overlap nm: what stays of them (at most a head of the
	 * first and a tail of the last: they are disjoint), then nm, in order */
	struct pv_map repl[3], after = { 0 };
	size_t nr = 0;
	bool have_after = false;
	for (size_t k = i; k < j; k++) {
		struct mt_piece p[2];
		size_t np = mt_cut(pv->maps[k].start, pv->maps[k].end, nm->start, nm->end, p);
		for (size_t q = 0; q < np; q++) {
			struct pv_map piece = pv->maps[k];
			piece.start = p[q].start;
			piece.end = p[q].end;
			piece.pgoff += p[q].pgoff_add;
			if (piece.end <= nm->start)
				repl[nr++] = piece;
			else {
				after = piece;
				have_after = true;
			}
		}
	}
	repl[nr++] = *nm;
	if (have_after)
		repl[nr++] = after;
	size_t tail = pv->nmaps - j;
	memmove(&pv->maps[i + nr], &pv->maps[j], tail * sizeof(*pv->maps));
	memcpy(&pv->maps[i], repl, nr * sizeof(*repl));
	pv->nmaps = i + nr + tail;
	return 0;
}

static struct pv_dso *new_dso(struct pv_builder *b, const char *path, bool jitted,
			      char *err, size_t errlen)
{
	struct pv_view *pv = b->pv;
	if (pv->ndsos >= b->cap_dsos) {
		snprintf(err, errlen, "internal: DSO table full");
		errno = ENOSPC;
		return NULL;
	}
	struct pv_dso *d = &pv->dsos[pv->ndsos];
	memset(d, 0, sizeof(*d));
	size_t n = strlen(path);
	if (n >= sizeof(d->path)) {
		snprintf(err, errlen, "path longer than %zu bytes: %.80s...", sizeof(d->path) - 1, path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(d->path, path, n + 1);
	d->jitted = jitted;
	pv->ndsos++;
	return d;
}

/* File maps as perf has them with --call-graph dwarf, which records every
 * mapping (seen here with perf 6.1: r--p and rw-p segments too, where
 * .eh_frame_hdr of -z separate-code binaries lives).  Anonymous ones carry no
 * file data for perf's readers, so they are left out. */
static bool perf_keeps_file_map(const struct uw_map *m)
{
	static const char *const anon[] = { "//anon", "/dev/zero", "/anon_hugepage", "/memfd:",
					    "/SYSV" };
	if (!m->path || m->path[0] != '/' || m->end <= m->start)
		return false;
	for (size_t i = 0; i < sizeof(anon) / sizeof(anon[0]); i++)
		if (!strncmp(m->path, anon[i], strlen(anon[i])))
			return false;
	return true;
}

/* The kernel's named pseudo maps: with mmap_data (--call-graph dwarf) it
 * reports them (and every growth of the stack) as MMAP2 records by these
 * names, which perf inject -j never strips (it strips //anon after a
 * jitdump's marker).  perf has a map there, but a DSO without data. */
static bool perf_keeps_pseudo_map(const struct uw_map *m)
{
	return m->path && m->end > m->start && (!strcmp(m->path, "[stack]") || !strcmp(m->path, "[heap]"));
}

static int add_file_maps(struct pv_builder *b, const struct uw_map *maps, size_t nmaps,
			 char *err, size_t errlen)
{
	int rc;
	for (size_t i = 0; i < nmaps; i++) {
		const struct uw_map *m = &maps[i];
		if (perf_keeps_pseudo_map(m)) {
			struct pv_map pm = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .dso = NULL };
			if ((rc = insert_map(b, &pm, err, errlen)))
				return rc;
			continue;
		}
		if (!perf_keeps_file_map(m))
			continue;
		struct pv_dso *d = find_file_dso(b->pv, m->path);
		if (!d) {
			d = new_dso(b, m->path, false, err, errlen);
			if (!d)
				return -errno;
			if (!(d->perf_name = strdup(m->path))) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			if ((rc = dso_load(d, true, err, errlen)))
				return rc;
		}
		struct pv_map pm = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .dso = d };
		if ((rc = insert_map(b, &pm, err, errlen)))
			return rc;
	}
	return 0;
}

/* Where perf inject puts the file: dirname of the dump as perf opened it. */
static char *perf_jitted_name(const struct jd_file *jd, const char *dump_dir,
			      const struct jd_load *l, const char *written)
{
	if (dump_dir) {
		char name[sizeof(jd->path) + 64];
		if (pv_jitted_path(name, sizeof(name), strcmp(dump_dir, "/") ? dump_dir : "", l))
			return NULL;
		return strdup(name);
	}
	const char *slash = strrchr(jd->path, '/');
	if (!jd->path[0])
		return strdup(written);
	char dir[sizeof(jd->path)];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == jd->path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - jd->path), jd->path);
	char name[sizeof(jd->path) + 64];
	if (pv_jitted_path(name, sizeof(name), strcmp(dir, "/") ? dir : "", l))
		return NULL;
	return strdup(name);
}

static int add_jit_loads(struct pv_builder *b, const struct jd_file *jd, char *err, size_t errlen)
{
	struct pv_view *pv = b->pv;
	int rc;
	if (jd->elf_mach > UINT16_MAX) {
		snprintf(err, errlen, "jitdump offset 0xc: elf_mach %u is not an ELF machine", jd->elf_mach);
		return -EINVAL;
	}
	for (size_t i = 0; i < jd->nloads; i++) {
		const struct jd_load *l = &jd->loads[i];
		char path[sizeof(pv->dsos[0].path)], why[600];
		if (pv_jitted_path(path, sizeof(path), pv->dir, l)) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": jitted file path too long", l->file_off);
			return -ENAMETOOLONG;
		}
		struct pv_layout ly;
		pv_layout_load(pv->profile, l, &ly);
		uint64_t len = ly.map_len;
		if (l->code_size > UINT64_MAX - 8 || len < l->code_size || l->code_addr > UINT64_MAX - len) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": CODE_LOAD '%s' at 0x%" PRIx64
				 " + 0x%" PRIx64 " wraps around the address space", l->file_off,
				 l->name ? l->name : "", l->code_addr, len);
			return -EINVAL;
		}
		if ((rc = pv_write_jitted_elf(path, pv->profile, l, (uint16_t)jd->elf_mach, why, sizeof(why)))) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": CODE_LOAD '%s': %s", l->file_off,
				 l->name ? l->name : "", why);
			return rc;
		}
		/* the same code_index again overwrites the file: perf's DSO of that
		 * name then has the last load's bytes for every map of it */
		struct pv_dso *d = find_jitted_dso(pv, l);
		if (!d && !(d = new_dso(b, path, true, why, sizeof(why)))) {
			rc = -errno;
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": %s", l->file_off, why);
			return rc;
		}
		d->load = l;
		if (!d->perf_name && !(d->perf_name = perf_jitted_name(jd, b->dump_dir, l, path))) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": out of memory", l->file_off);
			return -ENOMEM;
		}
		if ((rc = dso_load(d, false, why, sizeof(why)))) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": %s", l->file_off, why);
			return rc;
		}
		struct pv_map pm = { .start = ly.map_start, .end = ly.map_start + len,
				     .pgoff = ly.map_pgoff, .dso = d };
		if ((rc = insert_map(b, &pm, why, sizeof(why)))) {
			snprintf(err, errlen, "jitdump offset 0x%" PRIx64 ": %s", l->file_off, why);
			return rc;
		}
	}
	return 0;
}

int pv_build(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
	     const struct jd_file *jd, const char *outdir, char *err, size_t errlen)
{
	return pv_build_at(pv, prof, maps, nmaps, jd, outdir, NULL, err, errlen);
}

int pv_build_at(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
		const struct jd_file *jd, const char *outdir, const char *dump_dir,
		char *err, size_t errlen)
{
	int rc;
	memset(pv, 0, sizeof(*pv));
	if (!valid_profile(prof)) {
		snprintf(err, errlen, "unknown perf profile %d", (int)prof);
		return -EINVAL;
	}
	pv->profile = prof;
	if (outdir) {
		struct stat st;
		if (strlen(outdir) >= sizeof(pv->dir)) {
			snprintf(err, errlen, "output directory name too long");
			return -ENAMETOOLONG;
		}
		int serr = stat(outdir, &st) < 0 ? errno : 0;
		if (serr || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s: %s", outdir, serr ? strerror(serr) : "not a directory");
			return serr ? -serr : -ENOTDIR;
		}
		snprintf(pv->dir, sizeof(pv->dir), "%s", outdir);
	} else if (jd && jd->nloads) {
		/* only when there is a file to write: no empty directories left behind */
		snprintf(pv->dir, sizeof(pv->dir), "/tmp/jitunwind-pv-XXXXXX");
		if (!mkdtemp(pv->dir)) {
			int e = errno;
			snprintf(err, errlen, "cannot create a directory under /tmp: %s", strerror(e));
			pv->dir[0] = 0;
			return -e;
		}
		pv->private_dir = true;
	}
	struct pv_builder b = { .pv = pv, .dump_dir = dump_dir };
	size_t nl = jd ? jd->nloads : 0;
	if (nmaps > PV_MAX_MAPS || nl > PV_MAX_MAPS) {
		snprintf(err, errlen, "too many maps (%zu) or loads (%zu)", nmaps, nl);
		rc = -ERANGE;
		goto fail;
	}
	/* every map and load may bring a DSO: size the table once so map->dso stays valid */
	b.cap_dsos = nmaps + nl;
	if (b.cap_dsos) {
		pv->dsos = calloc(b.cap_dsos, sizeof(*pv->dsos));
		if (!pv->dsos) {
			snprintf(err, errlen, "out of memory for %zu DSOs", b.cap_dsos);
			rc = -ENOMEM;
			goto fail;
		}
	}
	/* perf sees the process's file maps first, then the MMAP2s it injects in load order */
	if ((rc = add_file_maps(&b, maps, nmaps, err, errlen)))
		goto fail;
	if (jd && (rc = add_jit_loads(&b, jd, err, errlen)))
		goto fail;
	return 0;
fail:
	pv_fini(pv);
	return rc;
}

void pv_fini(struct pv_view *pv)
{
	for (size_t i = 0; i < pv->ndsos; i++) {
		struct pv_dso *d = &pv->dsos[i];
		if (pv->private_dir && d->jitted)
			unlink(d->path);
		dso_clear(d);
		free(d->perf_name);
	}
	if (pv->private_dir && pv->dir[0])
		rmdir(pv->dir);
	free(pv->dsos);
	free(pv->maps);
	memset(pv, 0, sizeof(*pv));
}

const struct pv_map *pv_find(const struct pv_view *pv, uint64_t addr)
{
	size_t i = first_ending_after(pv, addr);
	if (i < pv->nmaps && pv->maps[i].start <= addr)
		return &pv->maps[i];
	return NULL;
}

bool pv_read(const struct pv_view *pv, uint64_t addr, void *buf, size_t n)
{
	const struct pv_map *m = pv_find(pv, addr);
	if (!m || !m->dso || !m->dso->image)
		return false;
	uint64_t off = addr - m->start + m->pgoff;
	if (off < m->pgoff || off > m->dso->size || n > m->dso->size - off)
		return false;
	memcpy(buf, m->dso->image + off, n);
	return true;
}

const char *pv_symbolize(const struct pv_view *pv, uint64_t addr)
{
	const struct pv_map *m = pv_find(pv, addr);
	if (!m || !m->dso || !m->dso->nsyms)
		return NULL;
	/* map_ip: a file offset, compared with file-relative symbols */
	uint64_t off = addr - m->start + m->pgoff;
	const struct pv_dso *d = m->dso;
	size_t lo = 0, hi = d->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->syms[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct pv_sym *s = &d->syms[lo - 1];
	return off < s->end ? s->name : NULL;
}
