//go:build linux

package speech

import (
	"syscall"
	"unsafe"
)

// schedIdle is Linux's SCHED_IDLE policy: the process runs only on CPU
// time no normal process wants, and a normal process that wakes takes the
// core from it at once.
const schedIdle = 5

// lowerPriority makes process pid yield to the appliance by policy:
// PriorityNormal leaves it be; PriorityNice makes its nice value the
// appliance's plus decoderNice (at most 19); PriorityIdle adds Linux's
// SCHED_IDLE to that (the nice value is what counts where the policy
// cannot be set). A decoder is batch work,
// while the calls' media runs against 20 ms deadlines on the same cores: a
// nice value alone left 500 talking callers' frames 0.3–7 % late while
// the decoders ran (make bench-calls ENGINE=echo), as the scheduler lets a
// niced process finish its slice before a woken media worker runs. It is
// best effort (the decoder runs either way).
func lowerPriority(pid int, policy string) error {
	if policy == PriorityNormal {
		return nil
	}
	// Linux's getpriority returns 20 - nice, so that it is never negative.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, pid, min(20-prio+decoderNice, 19)); err != nil {
		return err
	}
	if policy != PriorityIdle {
		return nil
	}
	var param struct{ priority int32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(pid), schedIdle, uintptr(unsafe.Pointer(&param))); errno != 0 {
		return errno
	}
	return nil
}
