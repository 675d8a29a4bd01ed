/* The jitted ELF file perf inject -j writes for a CODE_LOAD (genelf.c), in
 * the layout of a perf profile (pv_layout), with its build-id note. */
#include "arches.h"
#include "unwinders/model/perfview.h"
#include "unwinders/model/perfview_int.h"
#include "unwinders/model/maptree.h"
#include "unwinders/model/files.h"

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
#include "juerr.h"

/* ---- SHA-1 (FIPS 180-4), for the build-id note ---- */

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
static int elf_fail(struct ju_err *err, const char *path, const char *what)
{
	ju_errf(err, EINVAL, 0, "%s: %s: %s", path, what, elf_errmsg(-1));
	return -EIO;
}

/* What genelf would refuse or misread (its sizes are ints). */
static int elf_check(const char *path, enum pv_profile prof, const struct jd_load *l, struct ju_err *err)
{
	if (!pv_valid_profile(prof)) {
		ju_errf(err, EINVAL, 0, "%s: unknown perf profile %d", path, (int)prof);
		return -EINVAL;
	}
	/* genelf takes csize as an int */
	if (l->code_size > INT_MAX || (l->code_size && !l->code)) {
		ju_errf(err, EINVAL, 0, "%s: CODE_LOAD at jitdump offset 0x%" PRIx64 ": code_size 0x%" PRIx64
			 " is more than perf's genelf accepts", path, l->file_off, l->code_size);
		return -ERANGE;
	}
	if (l->has_unwind && (l->eh_frame_hdr_size > l->unwinding_size ||
			      l->unwinding_size > INT_MAX || (l->unwinding_size && !l->unwind))) {
		ju_errf(err, EINVAL, 0, "%s: UNWINDING_INFO at jitdump offset 0x%" PRIx64
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

static int elf_add_sections(Elf *e, const struct pv_elf *x, const char *path, struct ju_err *err)
{
	for (size_t i = 0; i < x->ns; i++) {
		const struct pv_scn *c = &x->scn[i];
		Elf_Scn *s = elf_newscn(e);
		Elf_Data *d = s ? elf_newdata(s) : NULL;
		Elf64_Shdr *sh = s ? elf64_getshdr(s) : NULL;
		if (!d || !sh)
			return elf_fail(err, path, "elf_newscn");
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
		    const char *path, struct ju_err *err)
{
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	if (!eh)
		return elf_fail(err, path, "elf64_newehdr");
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
		return elf_fail(err, path, "elf64_newphdr");
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = ly->load_offset;
	ph->p_vaddr = ly->load_vaddr;
	ph->p_paddr = ly->load_vaddr;
	ph->p_filesz = ly->load_size;
	ph->p_memsz = ly->load_size;
	ph->p_align = 8;
	int rc = elf_add_sections(e, x, path, err);
	if (rc)
		return rc;
	if (elf_update(e, ELF_C_WRITE) < 0)
		return elf_fail(err, path, "elf_update");
	return 0;
}

int pv_write_jitted_elf(const char *path, enum pv_profile prof, const struct jd_load *l,
			uint16_t elf_mach, struct ju_err *err)
{
	int rc = elf_check(path, prof, l, err);
	if (rc)
		return rc;
	struct pv_layout ly;
	pv_layout_load(prof, l, &ly);
	struct pv_elf x;
	memset(&x, 0, sizeof(x));
	if (elf_sections(&x, l, &ly)) {
		ju_errf(err, EINVAL, 0, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(x.strsym);
		return elf_fail(err, path, "libelf initialisation");
	}
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		ju_errf(err, EINVAL, 0, "%s: cannot create: %s", path, strerror(e));
		free(x.strsym);
		return -e;
	}
	rc = -EIO;
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!e)
		elf_fail(err, path, "elf_begin");
	else
		rc = elf_emit(e, &x, &ly, elf_mach, path, err);
	if (e)
		elf_end(e);
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		ju_errf(err, EINVAL, 0, "%s: close: %s", path, strerror(-rc));
	}
	if (rc)
		unlink(path);
	free(x.strsym);
	return rc;
}
