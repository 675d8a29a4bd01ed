/* `jitunwind bench`: filled in below. */
#include <stdio.h>
int hx_bench_main(int argc, char **argv);
int hx_bench_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "jitunwind bench: not built yet\n");
	return 2;
}
