/* The kernel's answer to "is the clock synchronised?", as the test says it.
 * libfaketime fakes the wall clock but leaves adjtimex to the real kernel,
 * whose answer is the host's (its NTP), not the faked clock's. Preloaded
 * with libfaketime, this answers a read (modes 0) of adjtimex/ntp_adjtime as
 * the kernel does for a clock NTP has synchronised (TIME_OK) when the file
 * NVR_TEST_SYNC_FILE starts with '1', and for one it has not (TIME_ERROR,
 * STA_UNSYNC) when it starts with '0'. Where it differs from the kernel: the
 * kernel also marks the clock unsynchronised by itself when it is set by
 * hand (settimeofday) or NTP falls silent; here only the file says so.
 * Anything else goes to the real call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

static int answer(struct timex *t, const char *real_name) {
	const char *path = getenv("NVR_TEST_SYNC_FILE");
	FILE *file = path ? fopen(path, "r") : NULL;
	int said = file ? fgetc(file) : EOF;
	if (file)
		fclose(file);
	if (t->modes != 0 || (said != '0' && said != '1')) {
		int (*real)(struct timex *) = (int (*)(struct timex *))dlsym(RTLD_NEXT, real_name);
		return real(t);
	}
	memset(t, 0, sizeof *t);
	if (said == '1') {
		t->maxerror = 1000;
		t->esterror = 100;
		return TIME_OK;
	}
	t->status = STA_UNSYNC;
	t->maxerror = 16000000;
	t->esterror = 16000000;
	return TIME_ERROR;
}

int adjtimex(struct timex *t) { return answer(t, "adjtimex"); }
int ntp_adjtime(struct timex *t) { return answer(t, "ntp_adjtime"); }
