/* JSON string writer: quotes, backslashes and control bytes escaped. */
#include "harness/case/jsonw.h"

#include <string.h>

void hx_jsonw_strn(FILE *f, const char *s, size_t n, unsigned flags)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || (ch >= 0x7f && (flags & HX_JSONW_LATIN1)))
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void hx_jsonw_str(FILE *f, const char *s, unsigned flags)
{
	if (s)
		hx_jsonw_strn(f, s, strlen(s), flags);
	else
		fputs("null", f);
}

void hx_jsonw_addrs(FILE *f, const uint64_t *a, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)a[i]);
	fputc(']', f);
}

void hx_jsonw_hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}
