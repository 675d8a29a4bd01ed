/* DWARF expressions (DWARF 5 section 2.5), the subset CFI uses. */
#include "unwinders/model/ehframe_int.h"
#include "unwinders/model/leb.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EHF_EXPR_STACK 64

/* ---- DWARF expressions (DWARF 5 section 2.5, the CFI subset) ---- */

int ehf_eval_expr(const uint8_t *expr, size_t len, const struct ehf_expr_ctx *ctx,
		  bool push_cfa, uint64_t cfa, uint64_t *out, struct ju_err *err)
{
	uint64_t st[EHF_EXPR_STACK];
	size_t sp = 0;
	struct ehf_cur c = { expr, len, 0, 0, NULL, 0, err };
	if (!expr && len)
		return ehf_fail(err, 0, "no expression");
	if (push_cfa)
		st[sp++] = cfa;
	for (unsigned steps = 0; c.pos < c.end; steps++) {
		size_t at = c.pos;
		uint8_t op = expr[c.pos++];  /* the loop condition checked the length */
		uint64_t u, a, b, v;
		int64_t s;
		if (steps >= EHF_EXPR_STEPS_MAX)
			return ehf_fail(err, at, "expression: more than %d steps (a loop?)",
					EHF_EXPR_STEPS_MAX);
#define NEED(n) do { if (sp < (size_t)(n)) return ehf_fail(err, at, "DW_OP 0x%02x at" \
		" offset 0x%zx: needs %zu stack entries, has %zu", op, at, (size_t)(n), sp); } while (0)
#define PUSH(x) do { uint64_t pushed_ = (x); if (sp >= EHF_EXPR_STACK) return ehf_fail(err, \
		at, "DW_OP 0x%02x at offset 0x%zx: stack overflow (%d entries)", op, at, \
		EHF_EXPR_STACK); st[sp++] = pushed_; } while (0)
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH((uint64_t)(op - DW_OP_lit0));
			continue;
		}
		if ((op >= DW_OP_breg0 && op <= DW_OP_breg31) || op == DW_OP_bregx) {
			u = op - DW_OP_breg0;
			if (op == DW_OP_bregx && ehf_get_uleb(&c, &u, "DW_OP_bregx register"))
				return -EINVAL;
			if (ehf_get_sleb(&c, &s, "DW_OP_breg offset"))
				return -EINVAL;
			if (!ctx || !ctx->read_reg)
				return ehf_fail(err, at, "DW_OP_breg at offset 0x%zx: no registers", at);
			if (u > UINT32_MAX || ctx->read_reg(ctx->arg, (unsigned)u, &v))
				return ju_errf(err, ENODATA, at, "DW_OP_breg at offset 0x%zx: register %" PRIu64
						" is not available", at, u);
			PUSH(v + (uint64_t)s);
			continue;
		}
		if ((op >= DW_OP_reg0 && op <= DW_OP_reg31) || op == DW_OP_regx)
			return ehf_fail(err, at, "DW_OP_reg* (0x%02x) at offset 0x%zx: a register"
					" location is not valid in a CFI expression", op, at);
		switch (op) {
		case DW_OP_nop:
			break;
		case DW_OP_addr:
		case DW_OP_const8u:
		case DW_OP_const8s:
			if (ehf_get_le(&c, 8, &u, "DW_OP operand"))
				return -EINVAL;
			PUSH(u);
			break;
		case DW_OP_const1u: case DW_OP_const1s:
		case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: {
			unsigned n = op <= DW_OP_const1s ? 1 : op <= DW_OP_const2s ? 2 : 4;
			if (ehf_get_le(&c, n, &u, "DW_OP operand"))
				return -EINVAL;
			if (((op - DW_OP_const1u) & 1) && (u >> (8 * n - 1)) & 1)
				u |= ~(uint64_t)0 << (8 * n);
			PUSH(u);
			break;
		}
		case DW_OP_constu:
			if (ehf_get_uleb(&c, &u, "DW_OP_constu operand"))
				return -EINVAL;
			PUSH(u);
			break;
		case DW_OP_consts:
			if (ehf_get_sleb(&c, &s, "DW_OP_consts operand"))
				return -EINVAL;
			PUSH((uint64_t)s);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(st[sp - 1]);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(st[sp - 2]);
			break;
		case DW_OP_pick: {
			uint8_t idx;
			if (ehf_get_u8(&c, &idx, "DW_OP_pick index"))
				return -EINVAL;
			NEED((size_t)idx + 1);
			PUSH(st[sp - 1 - idx]);
			break;
		}
		case DW_OP_swap:
			NEED(2);
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = v;
			break;
		case DW_OP_rot:  /* top -> third, second -> top, third -> second */
			NEED(3);
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = st[sp - 3];
			st[sp - 3] = v;
			break;
		case DW_OP_deref:
		case DW_OP_deref_size: {
			uint8_t n = 8;
			if (op == DW_OP_deref_size && ehf_get_u8(&c, &n, "DW_OP_deref_size size"))
				return -EINVAL;
			if (n < 1 || n > 8)
				return ehf_fail(err, at, "DW_OP_deref_size at offset 0x%zx: size %u,"
						" expected 1..8", at, n);
			NEED(1);
			if (!ctx || !ctx->read_mem)
				return ehf_fail(err, at, "DW_OP_deref at offset 0x%zx: no memory", at);
			if (ctx->read_mem(ctx->arg, st[sp - 1], &v))
				return ju_errf(err, EFAULT, at, "DW_OP_deref at offset 0x%zx: cannot read"
						" memory at 0x%" PRIx64, at, st[sp - 1]);
			st[sp - 1] = n == 8 ? v : v & ((UINT64_C(1) << (8 * n)) - 1);
			break;
		}
		case DW_OP_abs:
			NEED(1);
			if ((int64_t)st[sp - 1] < 0)
				st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_plus_uconst:
			if (ehf_get_uleb(&c, &u, "DW_OP_plus_uconst operand"))
				return -EINVAL;
			NEED(1);
			st[sp - 1] += u;
			break;
		case DW_OP_and: case DW_OP_div: case DW_OP_minus: case DW_OP_mod:
		case DW_OP_mul: case DW_OP_or: case DW_OP_plus: case DW_OP_shl:
		case DW_OP_shr: case DW_OP_shra: case DW_OP_xor:
		case DW_OP_eq: case DW_OP_ge: case DW_OP_gt:
		case DW_OP_le: case DW_OP_lt: case DW_OP_ne:
			NEED(2);
			b = st[--sp];  /* the former top */
			a = st[sp - 1];
			switch (op) {
			case DW_OP_and: v = a & b; break;
			case DW_OP_or: v = a | b; break;
			case DW_OP_xor: v = a ^ b; break;
			case DW_OP_plus: v = a + b; break;
			case DW_OP_minus: v = a - b; break;
			case DW_OP_mul: v = a * b; break;
			case DW_OP_div:
				if (b == 0)
					return ehf_fail(err, at, "DW_OP_div at offset 0x%zx: division"
							" by zero", at);
				/* INT64_MIN / -1 overflows: wrap as the hardware would not */
				v = (int64_t)b == -1 ? -a : (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case DW_OP_mod:
				if (b == 0)
					return ehf_fail(err, at, "DW_OP_mod at offset 0x%zx: division"
							" by zero", at);
				v = a % b;
				break;
			case DW_OP_shl: v = b >= 64 ? 0 : a << b; break;
			case DW_OP_shr: v = b >= 64 ? 0 : a >> b; break;
			case DW_OP_shra:
				v = b >= 64 ? ((int64_t)a < 0 ? ~(uint64_t)0 : 0)
					    : (uint64_t)((int64_t)a >> b);
				break;
			/* comparisons are signed (DWARF 5 2.5.1.5, generic type) */
			case DW_OP_eq: v = a == b; break;
			case DW_OP_ne: v = a != b; break;
			case DW_OP_ge: v = (int64_t)a >= (int64_t)b; break;
			case DW_OP_gt: v = (int64_t)a > (int64_t)b; break;
			case DW_OP_le: v = (int64_t)a <= (int64_t)b; break;
			default: v = (int64_t)a < (int64_t)b; break;  /* DW_OP_lt */
			}
			st[sp - 1] = v;
			break;
		case DW_OP_skip:
		case DW_OP_bra: {
			if (ehf_get_le(&c, 2, &u, "branch offset"))
				return -EINVAL;
			int64_t rel = (int16_t)(uint16_t)u;
			if (op == DW_OP_bra) {
				NEED(1);
				if (st[--sp] == 0)
					break;
			}
			int64_t target = (int64_t)c.pos + rel;
			if (target < 0 || (uint64_t)target > len)
				return ehf_fail(err, at, "DW_OP 0x%02x at offset 0x%zx: branch target"
						" %" PRId64 " is outside the expression (length %zu)",
						op, at, target, len);
			c.pos = (size_t)target;
			break;
		}
		default:
			return ehf_fail(err, at, "unsupported DWARF op 0x%02x at offset 0x%zx in a CFI"
					" expression", op, at);
		}
#undef NEED
#undef PUSH
	}
	if (sp == 0)
		return ehf_fail(err, len, "expression left an empty stack");
	*out = st[sp - 1];
	return 0;
}
