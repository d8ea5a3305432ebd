package realtime

import "encoding/json"

// Nullable is a JSON member that can be absent, null or set; session.update
// needs all three (turn_detection: null turns VAD off, absent leaves it).
// Use it with the omitzero tag option.
type Nullable[T any] struct {
	// Present is true when the member was in the JSON (null or not).
	Present bool
	// Value is nil for null.
	Value *T
}

// Some returns a present, non-null Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{Present: true, Value: &v} }

// Null returns a present null.
func Null[T any]() Nullable[T] { return Nullable[T]{Present: true} }

// IsZero reports whether n is absent, for omitzero.
func (n Nullable[T]) IsZero() bool { return !n.Present }

// IsNull reports whether n is present and null.
func (n Nullable[T]) IsNull() bool { return n.Present && n.Value == nil }

// MarshalJSON writes null or the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Value == nil {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON reads null or a value and marks n present.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Present = true
	if string(b) == "null" {
		n.Value = nil
		return nil
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	n.Value = v
	return nil
}
