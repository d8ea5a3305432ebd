package speech

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
)

// espeakLanguages is what espeak-ng says it speaks (espeak-ng --voices):
// asked once, and again after a failed ask.
type espeakLanguages struct {
	mu    sync.Mutex
	codes map[string]bool // nil until known
}

// otherLanguage is an entry of the "Other Languages" column, e.g. "(zh 5)".
var otherLanguage = regexp.MustCompile(`\(([A-Za-z0-9-]+) [0-9]+\)`)

// parseEspeakVoices reads the language codes (lower case) of espeak-ng
// --voices: the Language column and the languages each voice also
// speaks.
func parseEspeakVoices(out string) map[string]bool {
	codes := map[string]bool{}
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 {
			continue // the header
		}
		codes[strings.ToLower(f[1])] = true
		for _, m := range otherLanguage.FindAllStringSubmatch(line, -1) {
			codes[strings.ToLower(m[1])] = true
		}
	}
	return codes
}

// Language resolves a language tag the spec's list lacks to the espeak-ng
// language that speaks it: the tag itself, else the tag without its last
// subtags (sv-SE speaks sv); ok is false when espeak-ng has no voice for
// it (or cannot be asked).
func (e *Espeak) Language(tag string) (string, bool) {
	codes, err := e.languages()
	if err != nil {
		return "", false
	}
	return matchLanguage(codes, tag)
}

func (e *Espeak) languages() (map[string]bool, error) {
	e.langs.mu.Lock()
	defer e.langs.mu.Unlock()
	if e.langs.codes != nil {
		return e.langs.codes, nil
	}
	bin, err := e.bin()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(context.Background(), bin, "--voices").Output()
	if err != nil {
		return nil, fmt.Errorf("espeak-ng --voices: %w", err)
	}
	e.langs.codes = parseEspeakVoices(string(out))
	return e.langs.codes, nil
}

// languageTag matches a BCP-47-like tag: letters, digits and hyphens
// (underscores read as hyphens), a primary subtag of 2 or 3 letters.
var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[a-z0-9]{1,8})*$`)

// matchLanguage finds tag, or its prefix at a subtag boundary, in codes.
func matchLanguage(codes map[string]bool, tag string) (string, bool) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"))
	if !languageTag.MatchString(t) {
		return "", false
	}
	for t != "" {
		if codes[t] {
			return t, true
		}
		i := strings.LastIndexByte(t, '-')
		if i < 0 {
			break
		}
		t = t[:i]
	}
	return "", false
}
