/* The message sink (harness/case/say.h): a library's message reaches the
 * sink installed with its kind, speaker and text; without one the default
 * sink writes to stderr the bytes the library's own fprintf wrote before the
 * sink existed; the CLI's sink (the binary) writes the same bytes. */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/case/say.h"
#include "harness/outcome.h"
#include "harness/replay/realreplay.h"
#include "harness/report/dump.h"

#include "tests/hostarch.h"
#include "tests/sh.h"

#define MAX_SAID 16

struct said {
	int n;
	enum ju_say_kind kind[MAX_SAID];
	char who[MAX_SAID][64];
	char *text[MAX_SAID];
};

static void capture(void *ctx, enum ju_say_kind kind, const char *who, const char *text)
{
	struct said *s = ctx;
	ck_assert_int_lt(s->n, MAX_SAID);
	s->kind[s->n] = kind;
	snprintf(s->who[s->n], sizeof(s->who[0]), "%s", who ? who : "(none)");
	s->text[s->n] = strdup(text);
	ck_assert_ptr_nonnull(s->text[s->n]);
	s->n++;
}

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/jutest-say-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		fprintf(stderr, "test_say: cannot remove %s\n", tmp);
	ju_say_sink(NULL, NULL);
}

/* the whole of a file (malloc'd; "" when empty or missing) */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 16);
	ck_assert_ptr_nonnull(buf);
	if (f) {
		size_t n = fread(buf, 1, (1 << 16) - 1, f);
		buf[n] = 0;
		fclose(f);
	}
	return buf;
}

/* fd (1 or 2) into tmp/NAME from now until fd_end */
static int fd_to(int fd, const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	fflush(NULL);
	int keep = dup(fd), to = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert(keep >= 0 && to >= 0);
	ck_assert_int_eq(dup2(to, fd), fd);
	close(to);
	return keep;
}

/* fd back to what fd_to kept; what was written meanwhile */
static char *fd_end(int fd, int keep, const char *name)
{
	char path[128];
	fflush(NULL);
	ck_assert_int_eq(dup2(keep, fd), fd);
	close(keep);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	return slurp(path);
}


static const char *bin(void)
{
	const char *b = getenv("JU_BIN");
	return b ? b : "./jitunwind";
}

/* The bytes each kind's line had when the libraries printed it themselves:
 * the format of the fprintf the message replaced, applied to the same text. */
static const struct {
	enum ju_say_kind kind;
	const char *who, *text, *before;   /* before: the old fprintf's bytes */
} lines[] = {
	{ JU_SAY_ERROR, "jitunwind perf-check", "no .case files found", "jitunwind perf-check: no .case files found\n" },
	{ JU_SAY_WARNING, "jitunwind", "replay: the perf column of a recording is --perf CMD",
	  "jitunwind: replay: the perf column of a recording is --perf CMD\n" },
	{ JU_SAY_SKIP, "jitunwind", "skip: the perf column: no perf", "jitunwind: skip: the perf column: no perf\n" },
	{ JU_SAY_STATS, NULL, "replay stats: 3 samples", "replay stats: 3 samples\n" },
	{ JU_SAY_DEBUG, "fuzz-cfi", "case 7, run 2: 4 ops, 1 deletions: gone", "fuzz-cfi: case 7, run 2: 4 ops, 1 deletions: gone\n" },
	/* report_term.c's "\r\033[K[%zu/%zu] %.60s" and its erase "\r\033[K" */
	{ JU_SAY_PROGRESS, NULL, "[3/27] cpython-3.13-fp", "\r\033[K[3/27] cpython-3.13-fp" },
	{ JU_SAY_PROGRESS, NULL, "", "\r\033[K" },
	{ JU_SAY_ERROR, "jitunwind", "100%% of %s", "jitunwind: 100%% of %s\n" },   /* text, not a format */
};

/* Each kind: the sink gets kind, speaker and text; the default writes the
 * old bytes to stderr, and ju_say_print the same to any stream. */
START_TEST(default_line)
{
	const char *who = lines[_i].who, *text = lines[_i].text, *before = lines[_i].before;
	struct said s = { 0 };
	ju_say_sink(capture, &s);
	ju_say(lines[_i].kind, who, "%s", text);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.kind[0], lines[_i].kind);
	ck_assert_str_eq(s.who[0], who ? who : "(none)");
	ck_assert_str_eq(s.text[0], text);
	ju_say_sink(NULL, NULL);
	int keep = fd_to(2, "default");
	ju_say(lines[_i].kind, who, "%s", text);
	char *got = fd_end(2, keep, "default");
	ck_assert_str_eq(got, before);
	free(got);
	char buf[256] = { 0 };
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
	ck_assert_ptr_nonnull(f);
	ju_say_print(f, lines[_i].kind, who, text);
	fclose(f);
	ck_assert_str_eq(buf, before);
	free(s.text[0]);
}
END_TEST

/* A message longer than the sink's stack buffer arrives whole, to the sink
 * and on stderr. */
START_TEST(long_message_whole)
{
	size_t n = 10000;
	char *big = malloc(n + 1);
	ck_assert_ptr_nonnull(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	big[n] = 0;
	struct said s = { 0 };
	ju_say_sink(capture, &s);
	ju_say(JU_SAY_WARNING, "jitunwind", "%s: %s", "x.dump", big);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(strlen(s.text[0]), n + 8);
	ck_assert(!strncmp(s.text[0], "x.dump: ", 8) && !strcmp(s.text[0] + 8, big));
	ju_say_sink(NULL, NULL);
	int keep = fd_to(2, "long");
	ju_say(JU_SAY_WARNING, "jitunwind", "%s: %s", "x.dump", big);
	char *got = fd_end(2, keep, "long");
	ck_assert_uint_eq(strlen(got), strlen("jitunwind: x.dump: ") + n + 1);
	ck_assert(!strncmp(got, "jitunwind: x.dump: ", 19) && !strncmp(got + 19, big, n) && got[19 + n] == '\n');
	free(got);
	free(s.text[0]);
	free(big);
}
END_TEST

/* The report layer on bad input: dump of a file that is no jitdump says its
 * magic (read from the bytes here) through the sink as an error; the
 * default sink and the binary's (the CLI's sink) write one same line. */
START_TEST(dump_error_through_sink)
{
	static const uint8_t data[] = "garbage, not a jitdump: 40 bytes or more...";
	uint32_t magic;
	memcpy(&magic, data, 4);   /* jitdump's magic is the file's first u32 (host order) */
	char want[128], path[128];
	snprintf(want, sizeof(want), "g.dump: offset 0x0: bad magic 0x%x, expected 0x4a695444", magic);
	struct said s = { 0 };
	ju_say_sink(capture, &s);
	FILE *out = tmpfile();
	ck_assert_ptr_nonnull(out);
	ck_assert_int_ne(hx_dump_mem(out, "g.dump", data, sizeof(data), false, PV_CURRENT, false), 0);
	ck_assert_int_eq(ftell(out), 0);   /* nothing on the report's stream */
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.kind[0], JU_SAY_ERROR);
	ck_assert_str_eq(s.who[0], "jitunwind dump");
	ck_assert_msg(!strncmp(s.text[0], want, strlen(want)), "%s, want %s", s.text[0], want);
	ju_say_sink(NULL, NULL);
	int keep = fd_to(2, "dump");
	ck_assert_int_ne(hx_dump_mem(out, "g.dump", data, sizeof(data), false, PV_CURRENT, false), 0);
	char *got = fd_end(2, keep, "dump");
	char line[1200];
	snprintf(line, sizeof(line), "jitunwind dump: %s\n", s.text[0]);
	ck_assert_str_eq(got, line);
	free(got);
	fclose(out);
	/* the binary says the same of the same bytes at the same name */
	snprintf(path, sizeof(path), "%s/g.dump", tmp);
	FILE *f = fopen(path, "wb");
	ck_assert(f && fwrite(data, 1, sizeof(data), f) == sizeof(data) && !fclose(f));
	ck_assert_int_eq(sh("cd %s && %s dump g.dump >/dev/null 2>cli", tmp, bin()), 2);
	snprintf(path, sizeof(path), "%s/cli", tmp);
	got = slurp(path);
	ck_assert_str_eq(got, line);
	free(got);
	free(s.text[0]);
}
END_TEST

/* The replay layer on a perf.data whose header is cut: an error through the
 * sink naming the file and offset 0x8 (the header's size field, 0 here); the
 * default sink and the binary write "jitunwind: " and that text. */
START_TEST(replay_error_through_sink)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/p.data", tmp);
	FILE *f = fopen(path, "wb");
	static const uint8_t hdr[16] = "PERFILE2";   /* the magic, then size 0 */
	ck_assert(f && fwrite(hdr, 1, sizeof(hdr), f) == sizeof(hdr) && !fclose(f));
	struct hx_rr_settings set = { .path = path, .no_perf = true, .prof = PV_CURRENT, .top = 10 };
	struct hx_cmd_outcome out;
	struct said s = { 0 };
	ju_say_sink(capture, &s);
	ck_assert_int_lt(hx_realreplay_run(&set, &out), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.kind[0], JU_SAY_ERROR);
	ck_assert_str_eq(s.who[0], "jitunwind");
	char want[200];
	snprintf(want, sizeof(want), "%s: offset 0x8: ", path);
	ck_assert_msg(!strncmp(s.text[0], want, strlen(want)), "%s", s.text[0]);
	ju_say_sink(NULL, NULL);
	int keep = fd_to(2, "replay");
	ck_assert_int_lt(hx_realreplay_run(&set, &out), 0);
	char *got = fd_end(2, keep, "replay");
	char line[1200];
	snprintf(line, sizeof(line), "jitunwind: %s\n", s.text[0]);
	ck_assert_str_eq(got, line);
	free(got);
	ck_assert_int_eq(sh("%s replay --no-perf %s >/dev/null 2>%s/cli", bin(), path, tmp), 2);
	snprintf(path, sizeof(path), "%s/cli", tmp);
	got = slurp(path);
	ck_assert_str_eq(got, line);
	free(got);
	free(s.text[0]);
}
END_TEST

/* The replay layer warns on bad input and goes on: a recording whose
 * jitdump ends in a record cut short is judged up to the last whole record
 * (as perf inject -j reads it), said as a warning naming the dump, the cut
 * record's offsets (from the dump's size before the cut, from stat) and its
 * bytes. */
START_TEST(replay_warning_goes_on)
{
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --perf-data %s/p.data %s/%s >%s/log 2>&1", bin(), tmp,
			    tmp, tmp, host_cases()->dir, host_cases()->cpython, tmp), 0);
	char dump[256], data[128];
	ck_assert_int_eq(sh("cd %s && ls jit-*.dump | head -1 > name", tmp), 0);
	snprintf(data, sizeof(data), "%s/name", tmp);
	char *name = slurp(data);
	name[strcspn(name, "\n")] = 0;
	ck_assert_msg(name[0], "no jitdump recorded");
	snprintf(dump, sizeof(dump), "%s/%s", tmp, name);
	free(name);
	struct stat st;
	ck_assert_int_eq(stat(dump, &st), 0);
	/* a record header (JIT_CODE_LOAD, total size 200) and 4 of its bytes */
	static const uint8_t cut[20] = { 0, 0, 0, 0, 200, 0, 0, 0 };
	FILE *f = fopen(dump, "ab");
	ck_assert(f && fwrite(cut, 1, sizeof(cut), f) == sizeof(cut) && !fclose(f));
	snprintf(data, sizeof(data), "%s/p.data", tmp);
	struct hx_rr_settings set = { .path = data, .no_perf = true, .prof = PV_CURRENT, .top = 10 };
	struct hx_cmd_outcome out;
	struct said s = { 0 };
	ju_say_sink(capture, &s);
	int keep = fd_to(1, "report");   /* the replay's report, not under test */
	int rc = hx_realreplay_run(&set, &out);
	free(fd_end(1, keep, "report"));
	ck_assert_msg(rc == 0, "replay failed (%d): %s", rc, s.n ? s.text[0] : "(nothing said)");
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.kind[0], JU_SAY_WARNING);
	ck_assert_str_eq(s.who[0], "jitunwind");
	char want[400], tail[128];
	/* the reader names the cut record's total_size, 4 bytes after its id (jitdump's record header) */
	snprintf(want, sizeof(want), "%s: offset 0x%llx: ", dump, (unsigned long long)st.st_size + 4);
	snprintf(tail, sizeof(tail), "judged up to the last whole record (");
	ck_assert_msg(!strncmp(s.text[0], want, strlen(want)) && strstr(s.text[0], tail), "%s, want %s", s.text[0], want);
	snprintf(tail, sizeof(tail), "the %zu bytes from offset 0x%llx are not", sizeof(cut),
		 (unsigned long long)st.st_size);
	ck_assert_msg(strstr(s.text[0], tail), "%s, want %s", s.text[0], tail);
	free(s.text[0]);
}
END_TEST

Suite *suite_say(void);
Suite *suite_say(void)
{
	Suite *s = suite_create("say");
	TCase *tc = tcase_create("say");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, default_line, 0, (int)(sizeof(lines) / sizeof(lines[0])));
	tcase_add_test(tc, long_message_whole);
	tcase_add_test(tc, dump_error_through_sink);
	tcase_add_test(tc, replay_error_through_sink);
	tcase_add_test(tc, replay_warning_goes_on);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
