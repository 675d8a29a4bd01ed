/* The decoder of an ELF machine (from the arch table) and the one
 * interpreter of effects. */
#include "unwinders/decode.h"

#include "unwinders/uwarch.h"

const struct uw_decoder *uw_decoder_for(uint32_t elf_mach)
{
	const struct uw_arch *a = elf_mach <= UINT16_MAX ? uw_arch_by_mach((uint16_t)elf_mach) : NULL;
	return a ? a->decoder : NULL;
}

void uw_insn_add(struct uw_insn *x, enum uw_eff_kind k, int64_t n)
{
	if (x->neff < UW_MAX_EFF)
		x->eff[x->neff++] = (struct uw_eff){ .kind = k, .n = n };
}

void uw_insn_reg(struct uw_insn *x, enum uw_eff_kind k, unsigned reg, int64_t n)
{
	if (x->neff < UW_MAX_EFF)
		x->eff[x->neff++] = (struct uw_eff){ k, reg, n };
}

void uw_cfa_entry(struct uw_cfa_state *s, const struct uw_decoder *dc)
{
	*s = (struct uw_cfa_state){ .sp_known = true, .sp_d = dc->entry_cfa, .fp_entry = true, .regs_known = true };
	if (dc->ra_at_cfa) {
		s->ra_at = UW_RA_SLOT;
		s->ra_slot = dc->ra_cfa_off;
	}
}

/* A store keeps the register's entry value only while the register still
 * holds it; the slot is CFA-relative, as CFI rules are. */
static void eff_reg(struct uw_cfa_state *s, const struct uw_eff *e)
{
	if (e->reg >= UW_NREGS)
		return;
	uint32_t bit = 1u << e->reg;
	switch (e->kind) {
	case UW_EFF_STORE:
		if (s->ra_at == UW_RA_REG && e->reg == s->ra_reg) {
			/* the return address back on the stack (`push %r10`), not a save.
			 * Where sp was lost (V8's `lea (%rsp,%rcx,8),%rsp` drops a run-time
			 * count of arguments), the return address at [sp] is its slot, and
			 * its slot is what places the CFA: sp is known again */
			if (!s->sp_known && e->n == 0) {
				s->sp_known = true;
				s->sp_d = -s->ra_slot;
			}
			if (s->sp_known && e->n - s->sp_d == s->ra_slot)
				s->ra_at = UW_RA_SLOT;
			break;        /* else a copy: the register still holds it */
		}
		if (s->clobbered & bit || s->stored & bit)
			break;            /* a later store of a scratch value, or a second copy */
		if (!s->sp_known) {
			s->lost |= bit;
			break;
		}
		s->stored |= bit;
		s->slot[e->reg] = e->n - s->sp_d;
		break;
	case UW_EFF_LOAD:
		if (s->ra_at == UW_RA_SLOT && s->sp_known && e->n - s->sp_d == s->ra_slot) {
			s->ra_at = UW_RA_REG;          /* the return address, from its slot */
			s->ra_reg = e->reg;
			s->clobbered |= bit;
			break;
		}
		if (s->ra_at == UW_RA_REG && e->reg == s->ra_reg)
			s->ra_at = UW_RA_UNKNOWN;
		s->clobbered &= ~bit;     /* a saved value back, as RESTORE */
		break;
	case UW_EFF_RESTORE:
		if (s->ra_at == UW_RA_REG && e->reg == s->ra_reg)
			s->ra_at = UW_RA_UNKNOWN;
		s->clobbered &= ~bit;
		break;
	case UW_EFF_CLOBBER:
		if (s->ra_at == UW_RA_REG && e->reg == s->ra_reg)
			s->ra_at = UW_RA_UNKNOWN;
		s->clobbered |= bit;
		break;
	default:
		break;
	}
}

void uw_eff_apply(struct uw_cfa_state *s, const struct uw_insn *x)
{
	bool had = s->konst_ok;               /* a constant lives for one instruction */
	unsigned kreg = s->konst_reg;
	int64_t kval = s->konst;
	s->konst_ok = false;
	for (unsigned i = 0; i < x->neff; i++) {
		const struct uw_eff *e = &x->eff[i];
		switch (e->kind) {
		case UW_EFF_CONST:
			s->konst_ok = true;
			s->konst_reg = e->reg;
			s->konst = e->n;
			break;
		case UW_EFF_SP_ADD_REG:
			if (had && kreg == e->reg)
				s->sp_d -= e->n * kval;
			else
				s->sp_known = false;
			break;
		case UW_EFF_SP_ADD:
			s->sp_d -= e->n;
			break;
		case UW_EFF_FP_ADD:
			s->fp_d -= e->n;
			s->fp_popped = s->fp_entry = false;
			break;
		case UW_EFF_FP_FROM_SP:
			s->fp_known = s->sp_known;
			s->fp_d = s->sp_d - e->n;
			s->fp_popped = s->fp_entry = false;
			break;
		case UW_EFF_SP_FROM_FP:
			s->sp_known = s->fp_known;
			s->sp_d = s->fp_d - e->n;
			break;
		case UW_EFF_SP_UNKNOWN:
			s->sp_known = false;
			break;
		case UW_EFF_FP_UNKNOWN:
			s->fp_known = s->fp_popped = s->fp_entry = false;
			break;
		case UW_EFF_FP_RESTORE:
			s->fp_known = s->fp_entry = false;
			s->fp_popped = true;
			break;
		case UW_EFF_STORE:
		case UW_EFF_LOAD:
		case UW_EFF_RESTORE:
		case UW_EFF_CLOBBER:
			eff_reg(s, e);
			break;
		}
	}
}
