/* x86_64 decoder for the code-vs-CFI check (Intel SDM vol. 2, appendix A's
 * opcode maps): the length of every instruction of the one-byte, 0F, 0F38
 * and 0F3A maps and of VEX/EVEX, and the stack effects of those that move
 * rsp or rbp, save or restore a register or write a general register.  An
 * invalid or truncated instruction gives 0: the check says so (JD081). */
#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/decode.h"
#include "unwinders/uwarch.h"


static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* leave = mov %rbp,%rsp; pop %rbp */
static void leave(struct uw_insn *e)
{
	uw_insn_add(e, UW_EFF_SP_FROM_FP, 0);
	uw_insn_add(e, UW_EFF_SP_ADD, 8);
	uw_insn_add(e, UW_EFF_FP_RESTORE, 0);
}

/* ModRM (+SIB +disp) length; base/disp for lea; 0 if truncated. */
static size_t x86_modrm(const uint8_t *p, size_t n, uint8_t rex, int *base, int64_t *disp, bool *simple)
{
	if (n < 1)
		return 0;
	uint8_t m = p[0], mod = m >> 6, rm = m & 7;
	size_t len = 1;
	*base = -1;
	*disp = 0;
	*simple = false;
	if (mod == 3)
		return len;
	bool sib_index = false;
	int b = rm;
	if (rm == 4) {
		if (n < 2)
			return 0;
		uint8_t sib = p[1];
		len = 2;
		b = sib & 7;
		sib_index = (((sib >> 3) & 7) | ((rex & 2) << 2)) != 4;
		if (b == 5 && mod == 0) {
			if (n < len + 4)
				return 0;
			*disp = (int32_t)rd32(p + len);
			return len + 4;   /* no base */
		}
	} else if (rm == 5 && mod == 0) {
		if (n < 5)
			return 0;
		return 5;             /* rip-relative */
	}
	*base = b | ((rex & 1) << 3);
	if (mod == 1) {
		if (n < len + 1)
			return 0;
		*disp = (int8_t)p[len];
		len += 1;
	} else if (mod == 2) {
		if (n < len + 4)
			return 0;
		*disp = (int32_t)rd32(p + len);
		len += 4;
	}
	*simple = !sib_index;
	return len;
}

/* DWARF numbers of the 16 registers in encoding order (SysV psABI 3.6.2) */
static const uint8_t x86_dwarf[16] = { 0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15 };

/* a general register (encoding number) written with a value the check does not follow */
static void x86_write(struct uw_insn *e, int reg)
{
	if (reg < 0)
		return;
	if (reg == 4)                                     /* %rsp */
		uw_insn_add(e, UW_EFF_SP_UNKNOWN, 0);
	else if (reg == 5)                                /* %rbp */
		uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
	else
		uw_insn_reg(e, UW_EFF_CLOBBER, x86_dwarf[reg & 15], 0);
}

/* pop into reg, or a load of reg from the stack at sp + disp: its saved value
 * back, or the return address when that is its slot */
static void x86_restore(struct uw_insn *e, int reg, int64_t disp)
{
	if (reg == 5)
		uw_insn_add(e, UW_EFF_FP_RESTORE, 0);             /* %rbp: the caller's again */
	uw_insn_reg(e, UW_EFF_LOAD, x86_dwarf[reg & 15], disp);
}

/* ---- operand formats ---- */

enum { F_BAD = 1, F_M = 2, F_I8 = 4, F_IZ = 8, F_I16 = 16, F_IV = 32, F_MOFFS = 64, F_I16_8 = 128 };

/* the one-byte map (64-bit mode): ModRM? immediate? */
static unsigned fmt1(uint8_t op)
{
	if (op < 0x40) {
		switch (op & 7) {
		case 4: return F_I8;                          /* alu al, imm8 */
		case 5: return F_IZ;                          /* alu eax, imm32 */
		case 6: case 7: return op == 0x0f ? 0 : F_BAD;   /* push/pop seg, daa..: invalid */
		default: return F_M;
		}
	}
	if (op < 0x60)
		return 0;                                     /* rex (not here), push, pop */
	if (op >= 0x70 && op <= 0x7f)
		return F_I8;
	if (op >= 0x80 && op <= 0x8f)
		return op == 0x82 ? F_BAD : op == 0x81 ? F_M | F_IZ : (op == 0x80 || op == 0x83) ? F_M | F_I8 : F_M;
	if (op >= 0xb0 && op <= 0xb7)
		return F_I8;
	if (op >= 0xb8 && op <= 0xbf)
		return F_IV;
	if (op >= 0xd8 && op <= 0xdf)
		return F_M;                                   /* x87 */
	switch (op) {
	case 0x60: case 0x61: case 0x62: case 0x9a: case 0xc4: case 0xc5: case 0xce: case 0xd4: case 0xd5:
	case 0xd6: case 0xea: case 0xf0: case 0xf2: case 0xf3: case 0x64: case 0x65: case 0x66: case 0x67:
		return F_BAD;                                 /* invalid, or a prefix/VEX/EVEX handled before */
	case 0x63: return F_M;
	case 0x68: return F_IZ;
	case 0x69: return F_M | F_IZ;
	case 0x6a: return F_I8;
	case 0x6b: return F_M | F_I8;
	case 0xa0: case 0xa1: case 0xa2: case 0xa3: return F_MOFFS;
	case 0xa8: return F_I8;
	case 0xa9: return F_IZ;
	case 0xc0: case 0xc1: case 0xc6: return F_M | F_I8;
	case 0xc7: return F_M | F_IZ;
	case 0xc2: case 0xca: return F_I16;
	case 0xc8: return F_I16_8;
	case 0xcd: case 0xe0: case 0xe1: case 0xe2: case 0xe3: case 0xe4: case 0xe5: case 0xe6: case 0xe7:
	case 0xeb:
		return F_I8;
	case 0xe8: case 0xe9: return F_IZ;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: case 0xf6: case 0xf7: case 0xfe: case 0xff:
		return F_M;
	default: return 0;
	}
}

/* the 0F map */
static unsigned fmt2(uint8_t op)
{
	if (op >= 0x80 && op <= 0x8f)
		return F_IZ;                                  /* jcc rel32 */
	if (op >= 0xc8 && op <= 0xcf)
		return 0;                                     /* bswap */
	switch (op) {
	case 0x04: case 0x0a: case 0x0c: case 0x24: case 0x25: case 0x26: case 0x27: case 0x36:
	case 0x39: case 0x3b: case 0x3c: case 0x3d: case 0x3e: case 0x3f: case 0x7a: case 0x7b:
	case 0xa6: case 0xa7: case 0x38: case 0x3a:
		return F_BAD;                                 /* undefined (0F38/0F3A handled before) */
	case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x0e: case 0x30: case 0x31:
	case 0x32: case 0x33: case 0x34: case 0x35: case 0x37: case 0x77: case 0xa0: case 0xa1: case 0xa2:
	case 0xa8: case 0xa9: case 0xaa: case 0xb9: case 0xff:
		return 0;                                     /* ud1, ud0: capstone reads no ModRM */
	case 0x0f: case 0x70: case 0x71: case 0x72: case 0x73: case 0xa4: case 0xac: case 0xba: case 0xc2:
	case 0xc4: case 0xc5: case 0xc6:
		return F_M | F_I8;
	default: return F_M;
	}
}

struct x86_in {
	uint8_t rex;              /* REX, or R/X/B/W gathered from VEX/EVEX */
	bool p66, rep, vex;
	int vvvv;                 /* VEX/EVEX's extra register (-1: none) */
	unsigned map;             /* 1: one-byte, 2: 0F, 3: 0F38, 4: 0F3A, 5+: EVEX maps 5, 6 */
	uint8_t op;
	bool has_m;
	uint8_t mod, regf;
	int reg, rm;              /* ModRM's register and, with mod 3, r/m register (encoding numbers) */
	int base;                 /* memory operand: base register (-1: none, rip) */
	int64_t disp, imm;
	bool simple;              /* memory operand without an index */
};

/* VEX (c4, c5) and EVEX (62): the prefix's fields; its length, 0 if truncated or invalid */
static size_t x86_vex(const uint8_t *p, size_t n, struct x86_in *in)
{
	in->vex = true;
	if (p[0] == 0xc5) {
		if (n < 3)
			return 0;
		in->rex = (uint8_t)((~p[1] >> 5) & 4);
		in->vvvv = (~p[1] >> 3) & 15;
		in->p66 = (p[1] & 3) == 1;
		in->rep = (p[1] & 3) >= 2;
		in->map = 2;
		return 2;
	}
	if (p[0] == 0xc4) {
		if (n < 4)
			return 0;
		in->rex = (uint8_t)(((~p[1] >> 5) & 7) | ((p[2] >> 4) & 8));
		in->vvvv = (~p[2] >> 3) & 15;
		in->p66 = (p[2] & 3) == 1;
		in->rep = (p[2] & 3) >= 2;
		unsigned mm = p[1] & 31;
		if (mm < 1 || mm > 3)
			return 0;
		in->map = mm + 1;
		return 3;
	}
	if (n < 5 || !(p[2] & 4))
		return 0;                                     /* EVEX's P1 bit 2 is always 1 */
	in->rex = (uint8_t)(((~p[1] >> 5) & 7) | ((p[2] >> 4) & 8));
	in->vvvv = (~p[2] >> 3) & 15;
	in->p66 = (p[2] & 3) == 1;
	in->rep = (p[2] & 3) >= 2;
	unsigned mm = p[1] & 7;
	if (mm == 0 || mm == 4 || mm == 7)
		return 0;
	in->map = mm + 1;
	return 4;
}

/* The instruction's bytes into in; its length, 0 if invalid or truncated. */
static size_t x86_parse(const uint8_t *p, size_t n, struct x86_in *in)
{
	size_t i = 0;
	bool a67 = false;
	in->vvvv = -1;
	for (; i < n && i < 14; i++) {
		uint8_t b = p[i];
		if ((b & 0xf0) == 0x40) {
			in->rex = b;                              /* counts only right before the opcode */
			continue;
		}
		if (b == 0x66)
			in->p66 = true;
		else if (b == 0xf3 || b == 0xf2)
			in->rep = true;
		else if (b == 0x67)
			a67 = true;
		else if (!(b == 0xf0 || b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36 || b == 0x64 || b == 0x65))
			break;
		in->rex = 0;
	}
	if (i >= n)
		return 0;
	unsigned f;
	if ((p[i] == 0xc4 || p[i] == 0xc5 || p[i] == 0x62) && !in->rex) {
		size_t v = x86_vex(p + i, n - i, in);
		if (!v)
			return 0;
		i += v;
		in->op = p[i++];
		f = in->map == 4 || (in->map == 2 && (fmt2(in->op) & F_I8)) ? F_M | F_I8 : F_M;
		if (in->map == 2 && in->op == 0x77)
			f = 0;                                    /* vzeroupper, vzeroall */
	} else {
		in->op = p[i++];
		in->map = 1;
		f = fmt1(in->op);
		if (in->op == 0x0f) {
			if (i >= n)
				return 0;
			in->op = p[i++];
			in->map = 2;
			f = fmt2(in->op);
			if (in->op == 0x38 || in->op == 0x3a) {
				if (i >= n)
					return 0;
				in->map = in->op == 0x38 ? 3 : 4;
				in->op = p[i++];
				f = in->map == 4 ? F_M | F_I8 : F_M;
			}
		}
	}
	if (f & F_BAD)
		return 0;
	in->has_m = f & F_M;
	in->base = -1;
	in->rm = -1;
	if (in->has_m) {
		if (i >= n)
			return 0;
		uint8_t m = p[i];
		in->mod = m >> 6;
		in->regf = (m >> 3) & 7;
		in->reg = in->regf | ((in->rex & 4) << 1);
		if (in->map == 2 && in->op >= 0x20 && in->op <= 0x23)
			in->mod = 3;                              /* mov %cr/%dr: always registers */
		if (in->mod == 3)
			in->rm = (m & 7) | ((in->rex & 1) << 3);
		size_t ml = in->mod == 3 ? 1 : x86_modrm(p + i, n - i, in->rex, &in->base, &in->disp, &in->simple);
		if (!ml)
			return 0;
		i += ml;
	}
	bool w = in->rex & 8;
	size_t imm = 0;
	if (f & F_I8)
		imm = 1;
	else if (f & F_IZ)
		imm = in->p66 && !w ? 2 : 4;                  /* capstone: rel16 for 66-prefixed branches too */
	else if (f & F_I16)
		imm = 2;
	else if (f & F_I16_8)
		imm = 3;
	else if (f & F_IV)
		imm = w ? 8 : in->p66 ? 2 : 4;
	else if (f & F_MOFFS)
		imm = a67 ? 4 : 8;
	if (in->map == 2 && in->op == 0x78 && !in->vex && (in->p66 || in->rep) && in->mod == 3)
		imm = 2;                                      /* extrq, insertq (SSE4a): two imm8 */
	if (in->map == 1 && (in->op == 0xf6 || in->op == 0xf7) && in->regf < 2)
		imm = in->op == 0xf6 ? 1 : in->p66 && !w ? 2 : 4;   /* test r/m, imm */
	if (n - i < imm)
		return 0;
	in->imm = imm == 4 ? (int32_t)rd32(p + i) : imm == 2 ? (int16_t)(p[i] | p[i + 1] << 8) :
		  imm == 1 ? (int8_t)p[i] : imm == 3 ? (int64_t)(p[i] | p[i + 1] << 8 | p[i + 2] << 16) : 0;
	i += imm;
	return i <= 15 ? i : 0;
}

/* the register an 8-bit operand names (no REX: 4-7 are ah, ch, dh, bh, parts of 0-3) */
static int x86_breg(const struct x86_in *in, int r)
{
	return r >= 4 && r < 8 && !in->rex ? r - 4 : r;
}

/* the one-byte map's group 1 (add, or, ..., cmp) on a register */
static void x86_grp1(const struct x86_in *in, struct uw_insn *e, int rm)
{
	bool w = in->rex & 8;
	if (in->regf == 7 || rm < 0)
		return;                                       /* cmp, or memory */
	if ((rm == 4 || rm == 5) && w && (in->regf == 0 || in->regf == 5) && in->op != 0x80) {
		int64_t d = in->regf == 0 ? in->imm : -in->imm;   /* add : sub */
		uw_insn_add(e, rm == 4 ? UW_EFF_SP_ADD : UW_EFF_FP_ADD, d);
		return;
	}
	x86_write(e, rm);
}

/* mov between registers and memory (88-8b) */
static void x86_mov(const struct x86_in *in, struct uw_insn *e, bool byte)
{
	bool w = in->rex & 8;
	int reg = byte ? x86_breg(in, in->reg) : in->reg;
	int rm = in->rm >= 0 && byte ? x86_breg(in, in->rm) : in->rm;
	if (in->op == 0x89 || in->op == 0x88) {
		if (in->op == 0x89 && w && in->mod != 3 && in->simple && in->base == 4)
			uw_insn_reg(e, UW_EFF_STORE, x86_dwarf[reg & 15], in->disp);   /* mov %r, disp(%rsp) */
		if (w && rm == 5 && reg == 4)
			uw_insn_add(e, UW_EFF_FP_FROM_SP, 0);     /* mov %rsp,%rbp */
		else if (w && rm == 4 && reg == 5)
			uw_insn_add(e, UW_EFF_SP_FROM_FP, 0);     /* mov %rbp,%rsp */
		else
			x86_write(e, rm);
		return;
	}
	if (w && reg == 5 && rm == 4)
		uw_insn_add(e, UW_EFF_FP_FROM_SP, 0);
	else if (w && reg == 4 && rm == 5)
		uw_insn_add(e, UW_EFF_SP_FROM_FP, 0);
	else if (in->op == 0x8b && w && in->mod != 3 && in->simple && in->base == 4 && reg != 4)
		x86_restore(e, reg, in->disp);                /* mov disp(%rsp), %r */
	else
		x86_write(e, reg);
}

static void x86_lea(const struct x86_in *in, struct uw_insn *e)
{
	int reg = in->reg, base = in->base;
	if (reg != 4 && reg != 5) {
		x86_write(e, reg);
		return;
	}
	if (!(in->rex & 8) || !in->simple || (base != 4 && base != 5)) {
		x86_write(e, reg);
		return;
	}
	if (reg == 4 && base == 4)
		uw_insn_add(e, UW_EFF_SP_ADD, in->disp);
	else if (reg == 4)
		uw_insn_add(e, UW_EFF_SP_FROM_FP, in->disp);
	else if (base == 4)
		uw_insn_add(e, UW_EFF_FP_FROM_SP, in->disp);
	else
		uw_insn_add(e, UW_EFF_FP_ADD, in->disp);
}

/* push/pop of a register, 8 bytes (2 with 66) */
static void x86_push(const struct x86_in *in, struct uw_insn *e, int r, bool pop)
{
	int64_t sz = in->p66 ? 2 : 8;
	if (pop && sz == 8 && r >= 0 && r != 4) {
		x86_restore(e, r, 0);                         /* the load, then sp moves */
		uw_insn_add(e, UW_EFF_SP_ADD, sz);
		return;
	}
	uw_insn_add(e, UW_EFF_SP_ADD, pop ? sz : -sz);
	if (r < 0)
		return;
	if (!pop && sz == 8)
		uw_insn_reg(e, UW_EFF_STORE, x86_dwarf[r & 15], 0);
	else if (pop)
		x86_write(e, r);
}

/* group 5 (ff): inc, dec, call, jmp, push */
static void x86_grp5(const struct x86_in *in, struct uw_insn *e)
{
	switch (in->regf) {
	case 0: case 1: x86_write(e, in->rm); break;
	case 4: case 5: e->end = true; break;             /* jmp *r/m, ljmp */
	case 6: x86_push(in, e, in->rm, false); break;
	default: break;                                   /* call *r/m, lcall */
	}
}

/* one-byte map: 00-3f and 80-8f */
static bool x86_map1_lo(const struct x86_in *in, struct uw_insn *e)
{
	uint8_t op = in->op;
	bool byte = !(op & 1);
	int rm = in->rm >= 0 && byte ? x86_breg(in, in->rm) : in->rm;
	if (op < 0x40) {
		if ((op & 7) >= 4) {
			if ((op >> 3) != 7)
				x86_write(e, 0);                      /* alu %al/%eax, imm */
		} else if ((op >> 3) != 7) {
			x86_write(e, (op & 2) ? (byte ? x86_breg(in, in->reg) : in->reg) : rm);
		}
		return true;
	}
	if (op < 0x80 || op > 0x8f)
		return false;
	switch (op) {
	case 0x80: case 0x81: case 0x83: x86_grp1(in, e, rm); break;
	case 0x84: case 0x85: break;                      /* test */
	case 0x86: case 0x87:                             /* xchg */
		x86_write(e, byte ? x86_breg(in, in->reg) : in->reg);
		x86_write(e, rm);
		break;
	case 0x88: case 0x89: case 0x8a: case 0x8b: x86_mov(in, e, byte); break;
	case 0x8c: x86_write(e, in->rm); break;           /* mov %sreg, r/m */
	case 0x8d: x86_lea(in, e); break;
	case 0x8f: x86_push(in, e, in->rm, true); break;  /* pop r/m */
	default: break;                                   /* mov r/m, %sreg */
	}
	return true;
}

/* the one-byte map */
static void x86_map1(const struct x86_in *in, struct uw_insn *e)
{
	uint8_t op = in->op;
	int rb = (op & 7) | ((in->rex & 1) << 3);         /* the register in the opcode */
	if (x86_map1_lo(in, e))
		return;
	if (op >= 0x50 && op <= 0x5f) {
		x86_push(in, e, rb, op >= 0x58);
		return;
	}
	if (op >= 0x90 && op <= 0x97) {                   /* xchg %rax, r (90: nop unless REX.B) */
		if (rb) {
			x86_write(e, 0);
			x86_write(e, rb);
		}
		return;
	}
	if (op >= 0xb0 && op <= 0xbf) {                   /* mov $imm, r */
		x86_write(e, op < 0xb8 ? x86_breg(in, rb) : rb);
		return;
	}
	if (op >= 0xa4 && op <= 0xaf && op != 0xa8 && op != 0xa9) {
		x86_write(e, 7);                              /* string instructions: rdi, rsi, rcx, rax */
		if (op < 0xaa || op >= 0xac)
			x86_write(e, 6);
		if (in->rep)
			x86_write(e, 1);
		if (op == 0xac || op == 0xad)
			x86_write(e, 0);
		return;
	}
	if (op >= 0xd0 && op <= 0xd3) {                   /* shifts by 1, %cl */
		x86_write(e, in->rm >= 0 && !(op & 1) ? x86_breg(in, in->rm) : in->rm);
		return;
	}
	switch (op) {
	case 0x63: case 0x69: case 0x6b: x86_write(e, in->reg); break;
	case 0x68: case 0x6a: case 0x9c: x86_push(in, e, -1, false); break;  /* push imm, pushf */
	case 0x9d: x86_push(in, e, -1, true); break;      /* popf */
	case 0x6c: case 0x6d: x86_write(e, 7); break;     /* ins */
	case 0x6e: case 0x6f: x86_write(e, 6); break;     /* outs */
	case 0x98: case 0x9f: case 0xa0: case 0xa1: case 0xd7: case 0xe4: case 0xe5: case 0xec: case 0xed:
		x86_write(e, 0);                              /* cdqe, lahf, mov moffs, xlat, in */
		break;
	case 0x99: x86_write(e, 2); break;                /* cqo */
	case 0xe0: case 0xe1: case 0xe2: x86_write(e, 1); break;   /* loop */
	case 0xc0: case 0xc1: x86_write(e, in->rm >= 0 && op == 0xc0 ? x86_breg(in, in->rm) : in->rm); break;
	case 0xc6: case 0xc7:
		if (in->mod == 3 && in->regf == 7)
			break;                                    /* xabort, xbegin */
		x86_write(e, in->rm >= 0 && op == 0xc6 ? x86_breg(in, in->rm) : in->rm);
		break;
	case 0xc8:                                        /* enter imm16, 0: push %rbp; mov %rsp,%rbp; sub */
		x86_push(in, e, 5, false);
		uw_insn_add(e, UW_EFF_FP_FROM_SP, 0);
		if ((in->imm >> 16) & 0xff)
			uw_insn_add(e, UW_EFF_SP_UNKNOWN, 0);     /* nesting level: more pushes */
		else
			uw_insn_add(e, UW_EFF_SP_ADD, -(in->imm & 0xffff));
		break;
	case 0xc9: leave(e); break;
	case 0xc2: case 0xc3: case 0xca: case 0xcb: case 0xcc: case 0xcf: case 0xe9: case 0xeb: case 0xf4:
		e->end = true;                                /* ret, lret, int3, iret, jmp, hlt */
		break;
	case 0xdf:
		if (in->mod == 3 && in->regf == 4)
			x86_write(e, 0);                          /* fnstsw %ax */
		break;
	case 0xf6: case 0xf7:
		if (in->regf == 2 || in->regf == 3)
			x86_write(e, in->rm >= 0 && op == 0xf6 ? x86_breg(in, in->rm) : in->rm);   /* not, neg */
		else if (in->regf >= 4) {
			x86_write(e, 0);                          /* mul, div: rax, rdx */
			x86_write(e, 2);
		}
		break;
	case 0xfe:
		if (in->regf < 2)
			x86_write(e, in->rm >= 0 ? x86_breg(in, in->rm) : -1);
		break;
	case 0xff: x86_grp5(in, e); break;
	default: break;                                   /* jcc, call, x87, flags, int, out, nop, ... */
	}
}

/* VEX/EVEX in the 0F map: the few that write a general register */
static void x86_vex2(const struct x86_in *in, struct uw_insn *e)
{
	uint8_t op = in->op;
	if (op == 0x50 || op == 0xc5 || op == 0xd7 || op == 0x93 || ((op == 0x2c || op == 0x2d) && in->rep))
		x86_write(e, in->reg);                        /* vmovmsk, vpextrw, vpmovmskb, kmov, vcvt*2si */
	else if (op == 0x7e && in->p66)
		x86_write(e, in->rm);                         /* vmovd/vmovq %xmm, r/m */
}

/* the 0F map */
static void x86_map2(const struct x86_in *in, struct uw_insn *e)
{
	uint8_t op = in->op;
	if (in->vex) {
		x86_vex2(in, e);
		return;
	}
	if ((op >= 0x40 && op <= 0x4f) || op == 0x02 || op == 0x03 || op == 0x50 || op == 0xaf || op == 0xb6 ||
	    op == 0xb7 || op == 0xb8 || op == 0xbc || op == 0xbd || op == 0xbe || op == 0xbf || op == 0xc5 ||
	    op == 0xd7 || ((op == 0x2c || op == 0x2d) && in->rep)) {
		x86_write(e, in->reg);                        /* cmov, imul, movzx/sx, popcnt, bsf, cvt*2si, movmsk, ... */
		return;
	}
	if (op >= 0x90 && op <= 0x9f) {
		x86_write(e, in->rm >= 0 ? x86_breg(in, in->rm) : -1);   /* setcc */
		return;
	}
	if (op >= 0xc8 && op <= 0xcf) {
		x86_write(e, (op & 7) | ((in->rex & 1) << 3));   /* bswap */
		return;
	}
	switch (op) {
	case 0x00:
		if (in->regf < 2)
			x86_write(e, in->rm);                     /* sldt, str (lldt, ltr, verr, verw read) */
		break;
	case 0xb2: case 0xb4: case 0xb5: x86_write(e, in->reg); break;   /* lss, lfs, lgs */
	case 0x78:
		if (!in->p66 && !in->rep)
			x86_write(e, in->rm);                     /* vmread */
		break;
	case 0x20: case 0x21: case 0xa4: case 0xa5: case 0xab: case 0xac: case 0xad: case 0xb3:
	case 0xbb:
		x86_write(e, in->rm);                         /* mov %cr/%dr, shld/shrd, bts/btr/btc */
		break;
	case 0x7e:
		if (!in->rep)
			x86_write(e, in->rm);                     /* movd/movq %xmm/%mm, r/m */
		break;
	case 0xba:
		if (in->regf >= 5)
			x86_write(e, in->rm);
		break;
	case 0xb0: case 0xb1:                             /* cmpxchg */
		x86_write(e, 0);
		x86_write(e, in->rm >= 0 && op == 0xb0 ? x86_breg(in, in->rm) : in->rm);
		break;
	case 0xc0: case 0xc1:                             /* xadd */
		x86_write(e, op == 0xc0 ? x86_breg(in, in->reg) : in->reg);
		x86_write(e, in->rm >= 0 && op == 0xc0 ? x86_breg(in, in->rm) : in->rm);
		break;
	case 0xa0: case 0xa8: x86_push(in, e, -1, false); break;   /* push %fs, %gs */
	case 0xa1: case 0xa9: x86_push(in, e, -1, true); break;    /* pop %fs, %gs */
	case 0x05: x86_write(e, 1); x86_write(e, 11); x86_write(e, 0); break;   /* syscall */
	case 0x31: case 0x32: case 0x33: x86_write(e, 0); x86_write(e, 2); break;   /* rdtsc, rdmsr, rdpmc */
	case 0xa2: x86_write(e, 0); x86_write(e, 1); x86_write(e, 2); x86_write(e, 3); break;   /* cpuid */
	case 0x01:
		if (in->regf == 4)
			x86_write(e, in->rm);                     /* smsw */
		else if (in->mod == 3) {                      /* xgetbv, rdtscp, rdpkru, ... */
			x86_write(e, 0);
			x86_write(e, 1);
			x86_write(e, 2);
		}
		break;
	case 0xae:
		if (in->rep && in->mod == 3 && in->regf < 2)
			x86_write(e, in->rm);                     /* rdfsbase, rdgsbase */
		break;
	case 0xc7:
		if (in->mod == 3)
			x86_write(e, in->rm);                     /* rdrand, rdseed, rdpid */
		else if (in->regf == 1) {
			x86_write(e, 0);                          /* cmpxchg8b/16b */
			x86_write(e, 2);
		}
		break;
	case 0x07: case 0x0b: case 0xb9: case 0xff: e->end = true; break;   /* sysret, ud2, ud1, ud0 */
	default: break;                                   /* jcc, nop r/m, vector instructions */
	}
}

/* the 0F38 and 0F3A maps, and EVEX's others */
static void x86_map34(const struct x86_in *in, struct uw_insn *e)
{
	uint8_t op = in->op;
	if (in->map == 4) {
		if (op >= 0x14 && op <= 0x17)
			x86_write(e, in->rm);                     /* pextrb/w/d/q, extractps */
		else if (op == 0xf0 && in->vex)
			x86_write(e, in->reg);                    /* rorx */
		return;
	}
	if (in->map != 3)
		return;
	if (!in->vex) {
		if ((op == 0xf0 || op == 0xf1) && (in->rep || (op == 0xf0 && !in->p66)))
			x86_write(e, in->reg);                    /* crc32, movbe load */
		return;
	}
	if (op == 0xf2 || op == 0xf5 || op == 0xf6 || op == 0xf7)
		x86_write(e, in->reg);                        /* andn, bzhi/pdep/pext, mulx, bextr/shlx/... */
	if (op == 0xf3 || op == 0xf6)
		x86_write(e, in->vvvv);                       /* blsr/blsmsk/blsi, mulx's low half */
}

/* Decode one instruction; 0 if invalid or truncated. */
static size_t x86_decode(const uint8_t *p, size_t n, struct uw_insn *e)
{
	/* no memset of the effects: readers stop at neff (this runs at every boundary) */
	e->end = false;
	e->neff = 0;
	/* 00 00 is add %al,(%rax): zero-filled bytes (Erlang's CodeInfoPrologue data after its call) */
	e->data = n >= 2 && !p[0] && !p[1];
	e->fp_base = e->call = e->jump = false;
	if (n >= 1 && p[0] == 0x90)
		return 1;                                     /* nop: JIT padding, the common case */
	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] == 0xfa || p[3] == 0xfb))
		return 4;                                     /* endbr64 / endbr32 */
	struct x86_in in = { 0 };
	size_t len = x86_parse(p, n, &in);
	if (!len)
		return 0;
	e->fp_base = in.has_m && in.mod != 3 && in.base == 5;   /* disp(%rbp) */
	e->call = in.map == 1 && (in.op == 0xe8 || (in.op == 0xff && in.regf == 2));   /* call rel32, call *r/m */
	/* jcc rel8, jmp rel8, jmp rel32; jcc rel32 */
	e->jump = (in.map == 1 && ((in.op >= 0x70 && in.op <= 0x7f) || in.op == 0xeb || in.op == 0xe9)) ||
		  (in.map == 2 && in.op >= 0x80 && in.op <= 0x8f);
	e->rel = in.imm;
	if (in.map == 1)
		x86_map1(&in, e);
	else if (in.map == 2)
		x86_map2(&in, e);
	else
		x86_map34(&in, e);
	return len;
}

static const char *x86_dw_reg(unsigned r)
{
	return uw_decoder_reg(&arch_facts[ARCH_ID_x86_64], r);
}

/* Does the code hold `movabs $0x0,%r` (REX.W B8+r, eight zero bytes)
 * anywhere?  The cheap filter before capstone reads the load. */
static bool has_movabs_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 10 <= n; i++)
		if ((p[i] == 0x48 || p[i] == 0x49) && p[i + 1] >= 0xb8 && p[i + 1] <= 0xbf &&
		    !memcmp(p + i + 2, "\0\0\0\0\0\0\0\0", 8))
			return true;
	return false;
}

/* lint's JD082 on x86_64: the calls and jumps through a register whose last
 * write was `movabs $0x0` (LLVM's MCJIT before relocation: R_X86_64_64 not
 * applied).  Capstone reads a load that holds such a movabs at all, with the
 * registers each instruction writes; a call clobbers the caller-saved ones. */
static size_t x86_calls_zero(const uint8_t *code, size_t n, uint64_t addr, uint64_t *off, unsigned max,
			     unsigned *noff, char *first, size_t flen)
{
	csh h;
	if (!has_movabs_zero(code, n) || cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return 0;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *in = cs_malloc(h);
	static const x86_reg caller_saved[] = { X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RSI, X86_REG_RDI,
						X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11 };
	uint64_t zero_at[X86_REG_ENDING] = { 0 };   /* 1 + the movabs's offset; 0: not known zero */
	const uint8_t *p = code;
	size_t left = n, hits = 0;
	uint64_t pc = addr;
	while (in && left && cs_disasm_iter(h, &p, &left, &pc, in)) {   /* each step consumes bytes: bounded by n */
		const cs_x86 *x = &in->detail->x86;
		uint64_t o = in->address - addr;
		unsigned r = x->op_count == 1 && x->operands[0].type == X86_OP_REG ? x->operands[0].reg : 0;
		if ((in->id == X86_INS_CALL || in->id == X86_INS_JMP) && r && r < X86_REG_ENDING && zero_at[r]) {
			if (!hits++)
				snprintf(first, flen, "movabs $0x0,%%%s at +0x%" PRIx64 "; %s *%%%s", cs_reg_name(h, r),
					 zero_at[r] - 1, in->id == X86_INS_CALL ? "call" : "jmp", cs_reg_name(h, r));
			if (*noff < max)
				off[(*noff)++] = o;
		}
		cs_regs rr, ww;
		uint8_t nr = 0, nw = 0;
		if (cs_regs_access(h, in, rr, &nr, ww, &nw) == CS_ERR_OK)
			for (unsigned k = 0; k < nw; k++)
				if (ww[k] < X86_REG_ENDING)
					zero_at[ww[k]] = 0;
		if (in->id == X86_INS_CALL)
			for (size_t k = 0; k < sizeof(caller_saved) / sizeof(caller_saved[0]); k++)
				zero_at[caller_saved[k]] = 0;
		if (in->id == X86_INS_MOVABS && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[1].type == X86_OP_IMM && x->operands[1].imm == 0 && x->operands[0].reg < X86_REG_ENDING)
			zero_at[x->operands[0].reg] = o + 1;
	}
	cs_free(in, 1);
	cs_close(&h);
	return hits;
}

/* DWARF: rbp 6, rsp 7, return address column 16; a call leaves CFA = rsp + 8
 * with the return address at CFA-8, always (SysV psABI 3.6.2) */
const struct uw_decoder uw_decoder_x86_64 = {
	UW_DECODER_FACTS(x86_64), .max_insn = 15, .decode = x86_decode, .reg_name = x86_dw_reg,
	.calls_zero = x86_calls_zero,
};

/* the profiler side's record of the arch (unwinders/uwarch.h) */
const struct uw_arch uw_arch_x86_64 = {
	.facts = &arch_facts[ARCH_ID_x86_64],
	/* arch/x86/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "cs", "ss",
			    "ds", "es", "fs", "gs", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" },
	.perf_sp = 7, .perf_ip = 8, .perf_fp = 6, .perf_lr = -1,
	.ndw = 17,
	.lu_regs = 17,
	/* DWARF 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 RA(=ip) */
	.perf_of_dw = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8,
			-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
			-1, -1, -1, -1, -1, -1, -1 },
	.pac_mask = ~0ull,
	/* arch/x86/events/core.c perf_callchain_user: no monotonicity check, a
	 * zero return address is stored too, a zero FP ends the walk */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = ~0ull, .align = 0, .monotonic = false },
	.lu_ip_reads = 0,
	.has_cs = true, .cs_arch = CS_ARCH_X86, .cs_mode = CS_MODE_64, .cs_att = true,
	.decoder = &uw_decoder_x86_64,
};
