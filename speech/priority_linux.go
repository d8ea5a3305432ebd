//go:build linux

package speech

import "syscall"

// lowerPriority makes process pid yield to the appliance: its nice value
// becomes the appliance's plus decoderNice (at most 19). A decoder is batch
// work, while the calls' media runs against 20 ms deadlines on the same
// cores. It is best effort (the decoder runs either way).
func lowerPriority(pid int) error {
	// Linux's getpriority returns 20 - nice, so that it is never negative.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, min(20-prio+decoderNice, 19))
}
