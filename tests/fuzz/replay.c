/*
 * replay.c - a main() for the fuzz targets without libFuzzer: every file
 * named, and every file in every folder named, goes through the target's
 * LLVMFuzzerTestOneInput once, in name order. make quick builds each
 * target with it (by the project's compiler, no clang needed) and replays
 * its seed corpus, tests/fuzz/corpus/TARGET/; a crash or a trap is a
 * failure, as it is under the fuzzer.
 *
 *   build/fuzz/replay/fuzz_body tests/fuzz/corpus/fuzz_body [FILE...]
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		if (stat(argv[i], &sb) != 0) {
			fprintf(stderr, "replay: %s: not found\n", argv[i]);
			bad++;
			continue;
		}
		if (!S_ISDIR(sb.st_mode)) {
			bad += replay_file(argv[i]) != 0;
			files++;
			continue;
		}
		struct dirent **list;
		int n = scandir(argv[i], &list, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "replay: %s: cannot list\n", argv[i]);
			bad++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
			if (list[k]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
				bad += replay_file(path) != 0;
				files++;
			}
			free(list[k]);
		}
		free(list);
	}
	const char *name = strrchr(argv[0], '/');
	printf("%s: %d inputs replayed, %d unreadable\n", name ? name + 1 : argv[0], files, bad);
	return bad || !files ? 1 : 0;
}
