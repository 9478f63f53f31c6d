/*
 * The process of record/cupti's end-to-end test: it loads the injection
 * library as the CUDA driver would (dlopen, then InitializeInjection), and
 * ends as the test asks: "exit" returns from main (atexit flush), "term"
 * raises SIGTERM (the library's handler flushes, then the default action
 * kills the process), "fork" forks a child that exits (it must write
 * nothing) before the parent exits.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 3;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init || init() != 1)
		return 4;
	if (strcmp(argv[2], "term") == 0) {
		raise(SIGTERM);
		return 5; /* not reached: SIGTERM's default action */
	}
	if (strcmp(argv[2], "fork") == 0) {
		pid_t c = fork();
		if (c == 0)
			return 0;
		waitpid(c, NULL, 0);
	}
	return 0;
}
