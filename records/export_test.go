package records

// Queued is the number of calls queued for the next batch (tests).
func (r *Recorder) Queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		return 0
	}
	return len(r.next.entries)
}
