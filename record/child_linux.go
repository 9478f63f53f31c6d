package record

import "syscall"

// parentDeathSignal makes the kernel SIGKILL the child when the thread that
// started it dies — with startChild's locked thread, when record dies, even
// by SIGKILL, so a GPU server never outlives its recorder. SIGKILL, not
// SIGTERM: a dead recorder cannot escalate, and a child that ignores SIGTERM
// would keep running. The child's own children are its business: vLLM's
// engine and worker processes set a parent-death signal of their own
// (vllm/utils/system_utils.py, set_pdeathsig).
func parentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
