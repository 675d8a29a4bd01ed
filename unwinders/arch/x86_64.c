/* x86_64 decoder for the code-vs-CFI check: the stack-relevant instructions
 * of JIT code (Intel SDM vol. 2), everything else stops the check. */
#include "unwinders/decode.h"


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

/* pop into reg, or a load of reg from the stack: its saved value back */
static void x86_restore(struct uw_insn *e, int reg)
{
	if (reg == 5)
		uw_insn_add(e, UW_EFF_FP_RESTORE, 0);             /* %rbp: the caller's again */
	uw_insn_reg(e, UW_EFF_RESTORE, x86_dwarf[reg & 15], 0);
}

/* Decode one instruction; 0 if unknown or truncated. */
static size_t x86_decode(const uint8_t *p, size_t n, struct uw_insn *e)
{
	/* no memset of the effects: readers stop at neff (this runs at every boundary) */
	e->end = false;
	e->neff = 0;
	if (n >= 1 && p[0] == 0x90)
		return 1;                                     /* nop: JIT padding, the common case */
	size_t i = 0;
	bool p66 = false, pf3 = false;
	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] == 0xfa || p[3] == 0xfb))
		return 4;                                     /* endbr64 / endbr32 */
	for (; i < n && i < 4; i++) {
		uint8_t b = p[i];
		if (b == 0x66)
			p66 = true;
		else if (b == 0xf3)
			pf3 = true;
		else if (b == 0x2e || b == 0x3e || b == 0xf2)  /* cs/notrack, ds, bnd */
			continue;
		else
			break;
	}
	uint8_t rex = 0;
	if (i < n && (p[i] & 0xf0) == 0x40)
		rex = p[i++];
	if (i >= n)
		return 0;
	bool w = rex & 8;
	uint8_t op = p[i++];
	int base;
	int64_t disp;
	bool simple;
	size_t ml;
	if (p66 && !(op == 0x90 || (op == 0x0f && i < n && p[i] == 0x1f)))
		return 0;                                     /* only the 66-prefixed nops */
	if (pf3 && op != 0x90 && op != 0xc3)
		return 0;                                     /* pause, rep ret */
	if (op >= 0x50 && op <= 0x57) {                   /* push r64 */
		uw_insn_add(e, UW_EFF_SP_ADD, -8);
		uw_insn_reg(e, UW_EFF_STORE, x86_dwarf[(op & 7) | ((rex & 1) << 3)], 0);
		return i;
	}
	if (op >= 0x58 && op <= 0x5f) {                   /* pop r64 */
		int r = (op & 7) | ((rex & 1) << 3);
		uw_insn_add(e, UW_EFF_SP_ADD, 8);
		if (r == 4)
			x86_write(e, r);
		else
			x86_restore(e, r);
		return i;
	}
	if (op >= 0xb8 && op <= 0xbf) {                   /* mov $imm, r */
		size_t k = w ? 8 : 4;
		if (n - i < k)
			return 0;
		x86_write(e, (op & 7) | ((rex & 1) << 3));
		return i + k;
	}
	if (op >= 0x91 && op <= 0x97) {                   /* xchg %rax, r */
		x86_write(e, (op & 7) | ((rex & 1) << 3));
		return i;
	}
	if (op >= 0x70 && op <= 0x7f)                     /* jcc rel8 */
		return n - i >= 1 ? i + 1 : 0;
	switch (op) {
	case 0x90: return i;                              /* nop, pause */
	case 0x68: uw_insn_add(e, UW_EFF_SP_ADD, -8); return n - i >= 4 ? i + 4 : 0;
	case 0x6a: uw_insn_add(e, UW_EFF_SP_ADD, -8); return n - i >= 1 ? i + 1 : 0;
	case 0xc3: e->end = true; return i;            /* ret */
	case 0xc2: e->end = true; return n - i >= 2 ? i + 2 : 0;
	case 0xc9: leave(e); return i;             /* leave */
	case 0xcc: e->end = true; return i;            /* int3: padding or a trap */
	case 0xe8: return n - i >= 4 ? i + 4 : 0;         /* call rel32 */
	case 0xe9: e->end = true; return n - i >= 4 ? i + 4 : 0;
	case 0xeb: e->end = true; return n - i >= 1 ? i + 1 : 0;
	case 0xe3: return n - i >= 1 ? i + 1 : 0;         /* jrcxz */
	case 0x0f:
		if (i >= n)
			return 0;
		op = p[i++];
		if (op == 0x05 || op == 0xa2)                 /* syscall, cpuid */
			return i;
		if (op == 0x0b) {                             /* ud2 */
			e->end = true;
			return i;
		}
		if (op >= 0x80 && op <= 0x8f)                 /* jcc rel32 */
			return n - i >= 4 ? i + 4 : 0;
		if (op == 0x1f || op == 0x1e) {               /* nopw/nopl r/m */
			ml = x86_modrm(p + i, n - i, rex, &base, &disp, &simple);
			return ml ? i + ml : 0;
		}
		if ((op >= 0x40 && op <= 0x4f) || op == 0xaf || op == 0xb6 || op == 0xb7 ||
		    op == 0xbe || op == 0xbf) {               /* cmovcc, imul, movzx, movsx: reg written */
			if (i >= n)
				return 0;
			x86_write(e, ((p[i] >> 3) & 7) | ((rex & 4) << 1));
			ml = x86_modrm(p + i, n - i, rex, &base, &disp, &simple);
			return ml ? i + ml : 0;
		}
		return 0;
	default:
		break;
	}
	/* the rest take ModRM */
	bool alu = op < 0x40 && (op & 7) <= 3;
	if (!(alu || op == 0x63 || op == 0x69 || op == 0x6b || (op >= 0x80 && op <= 0x8b && op != 0x82) ||
	      op == 0x8d || op == 0x8f || op == 0xc0 || op == 0xc1 || op == 0xc6 || op == 0xc7 ||
	      (op >= 0xd0 && op <= 0xd3) || op == 0xf6 || op == 0xf7 || op == 0xfe || op == 0xff))
		return 0;
	if (i >= n)
		return 0;
	uint8_t m = p[i], mod = m >> 6, regf = (m >> 3) & 7;
	int reg = regf | ((rex & 4) << 1);
	int rm = (m & 7) | ((rex & 1) << 3);
	bool byte = !(op & 1) && (alu || (op >= 0x80 && op <= 0x8a) || op == 0xc0 || op == 0xc6 ||
				 op == 0xd0 || op == 0xd2 || op == 0xf6 || op == 0xfe);
	/* an 8-bit register 4/5 is %ah/%ch without REX, %spl/%bpl with it */
	int breg = byte && !rex ? -1 : reg, brm = mod == 3 ? (byte && !rex ? -1 : rm) : -1;
	ml = x86_modrm(p + i, n - i, rex, &base, &disp, &simple);
	if (!ml)
		return 0;
	i += ml;
	size_t imm = 0;
	switch (op) {
	case 0x69: case 0x81: case 0xc7: imm = 4; break;
	case 0x6b: case 0x80: case 0x83: case 0xc0: case 0xc1: case 0xc6: imm = 1; break;
	case 0xf6: imm = regf < 2 ? 1 : 0; break;
	case 0xf7: imm = regf < 2 ? 4 : 0; break;
	default: break;
	}
	if (n - i < imm)
		return 0;
	int64_t iv = imm == 4 ? (int32_t)rd32(p + i) : imm == 1 ? (int8_t)p[i] : 0;
	i += imm;
	if (alu) {
		if ((op >> 3) != 7)                           /* cmp writes nothing */
			x86_write(e, (op & 2) ? breg : brm);
		return i;
	}
	switch (op) {
	case 0x63: case 0x69: case 0x6b:
		x86_write(e, reg);
		return i;
	case 0x80: case 0x81: case 0x83:                  /* group 1 on r/m */
		if (regf == 7 || brm < 0)
			return i;                                 /* cmp, or memory */
		if ((brm == 4 || brm == 5) && w && (regf == 0 || regf == 5)) {
			int64_t d = regf == 0 ? iv : -iv;         /* add : sub */
			if (brm == 4) {
				uw_insn_add(e, UW_EFF_SP_ADD, d);
			} else {
				uw_insn_add(e, UW_EFF_FP_ADD, d);
			}
			return i;
		}
		x86_write(e, brm);
		return i;
	case 0x84: case 0x85:                             /* test */
		return i;
	case 0x86: case 0x87:                             /* xchg */
		x86_write(e, breg);
		x86_write(e, brm);
		return i;
	case 0x88: case 0x89:                             /* mov r -> r/m */
		if (op == 0x89 && w && mod != 3 && simple && base == 4)
			uw_insn_reg(e, UW_EFF_STORE, x86_dwarf[reg & 15], disp);   /* mov %r, disp(%rsp) */
		if (brm < 0)
			return i;
		if (w && brm == 5 && reg == 4) {              /* mov %rsp,%rbp */
			uw_insn_add(e, UW_EFF_FP_FROM_SP, 0);
			return i;
		}
		if (w && brm == 4 && reg == 5) {              /* mov %rbp,%rsp */
			uw_insn_add(e, UW_EFF_SP_FROM_FP, 0);
			return i;
		}
		x86_write(e, brm);
		return i;
	case 0x8a: case 0x8b:                             /* mov r/m -> r */
		if (mod == 3 && w && reg == 5 && rm == 4) {
			uw_insn_add(e, UW_EFF_FP_FROM_SP, 0);
			return i;
		}
		if (mod == 3 && w && reg == 4 && rm == 5) {
			uw_insn_add(e, UW_EFF_SP_FROM_FP, 0);
			return i;
		}
		if (op == 0x8b && w && mod != 3 && simple && base == 4 && reg != 4) {
			x86_restore(e, reg);                      /* mov disp(%rsp), %r */
			return i;
		}
		x86_write(e, breg);
		return i;
	case 0x8d:                                        /* lea */
		if (reg != 4 && reg != 5)
			return i;
		if (w && simple && (base == 4 || base == 5)) {
			if (reg == 4 && base == 4) {
				uw_insn_add(e, UW_EFF_SP_ADD, disp);
			} else if (reg == 4) {
				uw_insn_add(e, UW_EFF_SP_FROM_FP, disp);
			} else if (base == 4) {
				uw_insn_add(e, UW_EFF_FP_FROM_SP, disp);
			} else {
				uw_insn_add(e, UW_EFF_FP_ADD, disp);
			}
			return i;
		}
		x86_write(e, reg);
		return i;
	case 0x8f:                                        /* pop r/m */
		if (regf != 0)
			return 0;
		uw_insn_add(e, UW_EFF_SP_ADD, 8);
		if (brm >= 0)
			x86_write(e, brm);
		return i;
	case 0xc6: case 0xc7:
		if (regf != 0)
			return 0;
		if (brm >= 0)
			x86_write(e, brm);
		return i;
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		if (brm >= 0)
			x86_write(e, brm);
		return i;
	case 0xf6: case 0xf7:
		if ((regf == 2 || regf == 3) && brm >= 0)     /* not, neg */
			x86_write(e, brm);
		return i;                                     /* test, mul, div: rax/rdx */
	case 0xfe:
		if (regf > 1)
			return 0;
		if (brm >= 0)
			x86_write(e, brm);
		return i;
	case 0xff:
		switch (regf) {
		case 0: case 1:
			if (brm >= 0)
				x86_write(e, brm);
			return i;
		case 2: return i;                             /* call *r/m */
		case 4: e->end = true; return i;           /* jmp *r/m */
		case 6:                                       /* push r/m */
			uw_insn_add(e, UW_EFF_SP_ADD, -8);
			if (brm >= 0)
				uw_insn_reg(e, UW_EFF_STORE, x86_dwarf[brm & 15], 0);
			return i;
		default: return 0;
		}
	default:
		return 0;
	}
}

static const char *x86_reg(unsigned r)
{
	static const char *const n[17] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
					   "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	return r < 17 ? n[r] : "r?";
}

/* DWARF: rbp 6, rsp 7, return address column 16; a call leaves CFA = rsp + 8
 * with the return address at CFA-8, always (SysV psABI 3.6.2) */
const struct uw_decoder uw_decoder_x86_64 = {
	.sp = 7, .fp = 6, .ra = 16, .entry_cfa = 8,
	.ra_at_cfa = true, .ra_cfa_off = -8, .decode = x86_decode, .reg_name = x86_reg,
};
