/* The decoder table (by ELF machine) and the one interpreter of effects. */
#include "unwinders/decode.h"

static const struct uw_decoder *const decoders[] = { &uw_decoder_x86_64, &uw_decoder_aarch64 };

const struct uw_decoder *uw_decoder_for(uint32_t elf_mach)
{
	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++)
		if (decoders[i]->elf_mach == elf_mach)
			return decoders[i];
	return NULL;
}

void uw_insn_add(struct uw_insn *x, enum uw_eff_kind k, int64_t n)
{
	if (x->neff < UW_MAX_EFF)
		x->eff[x->neff++] = (struct uw_eff){ k, n };
}

void uw_eff_apply(struct uw_cfa_state *s, const struct uw_insn *x)
{
	for (unsigned i = 0; i < x->neff; i++) {
		const struct uw_eff *e = &x->eff[i];
		switch (e->kind) {
		case UW_EFF_SP_ADD:
			s->sp_d -= e->n;
			break;
		case UW_EFF_FP_ADD:
			s->fp_d -= e->n;
			break;
		case UW_EFF_FP_FROM_SP:
			s->fp_known = s->sp_known;
			s->fp_d = s->sp_d - e->n;
			s->fp_popped = false;
			break;
		case UW_EFF_SP_FROM_FP:
			s->sp_known = s->fp_known;
			s->sp_d = s->fp_d - e->n;
			break;
		case UW_EFF_SP_UNKNOWN:
			s->sp_known = false;
			break;
		case UW_EFF_FP_UNKNOWN:
			s->fp_known = s->fp_popped = false;
			break;
		case UW_EFF_FP_RESTORE:
			s->fp_known = false;
			s->fp_popped = true;
			break;
		}
	}
}
