//go:build !linux

package speech

// lowerPriority does nothing where the appliance is not deployed.
func lowerPriority(int, string) error { return nil }
