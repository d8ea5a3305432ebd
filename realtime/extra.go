package realtime

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Extra holds JSON members a typed object does not model, so that field
// names the spec leaves "not shown" survive a decode/encode round trip.
type Extra map[string]json.RawMessage

var knownCache sync.Map // reflect.Type -> map[string]bool

func knownKeys(t reflect.Type) map[string]bool {
	if k, ok := knownCache.Load(t); ok {
		return k.(map[string]bool)
	}
	k := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		k[name] = true
	}
	knownCache.Store(t, k)
	return k
}

// marshalWithExtra marshals v (a method-less copy of the typed object) and
// appends the extra members that v does not already define, in key order.
func marshalWithExtra(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	known := knownKeys(reflect.TypeOf(v))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for i, k := range keys {
		if i > 0 || len(b) > 2 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if len(extra[k]) == 0 {
			buf.WriteString("null")
		} else {
			buf.Write(extra[k])
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unmarshalWithExtra decodes b into v (a pointer to a method-less copy of the
// typed object) and returns the members v does not model.
func unmarshalWithExtra(b []byte, v any) (Extra, error) {
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	known := knownKeys(reflect.TypeOf(v).Elem())
	for k := range all {
		if known[k] {
			delete(all, k)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}
