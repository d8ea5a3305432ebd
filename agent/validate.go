package agent

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"switchboard/api/httpx"
)

// Limits of an agent's text fields, in characters (Unicode code points).
const (
	MaxNameLen         = 200
	MaxInstructionsLen = 32 * 1024
	MaxGreetingLen     = 2000
)

// languageRE is the subset of BCP-47 an agent takes: a 2-3 letter language,
// an optional 4-letter script and an optional 2-letter or 3-digit region
// (en, en-US, zh-Hant-TW, es-419).
var languageRE = regexp.MustCompile(`^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-([a-zA-Z]{2}|[0-9]{3}))?$`)

func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", httpx.BadRequest("name", "name is required")
	case utf8.RuneCountInString(name) > MaxNameLen:
		return "", httpx.BadRequest("name", "name is longer than %d characters", MaxNameLen)
	case hasControl(name):
		return "", httpx.BadRequest("name", "name holds control characters")
	}
	return name, nil
}

func checkInstructions(s string) error {
	if utf8.RuneCountInString(s) > MaxInstructionsLen {
		return httpx.BadRequest("instructions", "instructions are longer than %d characters", MaxInstructionsLen)
	}
	if err := CheckTemplate(s); err != nil {
		return httpx.BadRequest("instructions", "%v", err)
	}
	return nil
}

func checkGreeting(s string) error {
	if utf8.RuneCountInString(s) > MaxGreetingLen {
		return httpx.BadRequest("greeting", "greeting is longer than %d characters", MaxGreetingLen)
	}
	if err := CheckTemplate(s); err != nil {
		return httpx.BadRequest("greeting", "%v", err)
	}
	return nil
}

// checkVoice returns the voice id in lower case.
func checkVoice(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if !KnownVoice(v) {
		return "", httpx.BadRequest("voice", "unknown voice %q; voices: %s", v, strings.Join(Voices, ", "))
	}
	return v, nil
}

func checkModel(m string) error {
	if !KnownModel(m) {
		return httpx.BadRequest("model", "unknown model %q; models: %s", m, strings.Join(Models, ", "))
	}
	return nil
}

// CanonicalLanguage checks a language tag and returns it in canonical case
// (en-us → en-US, zh-hant-tw → zh-Hant-TW, AUTO → auto). Empty stays empty.
func CanonicalLanguage(tag string) (string, bool) {
	tag = strings.TrimSpace(tag)
	if tag == "" {
		return "", true
	}
	if strings.EqualFold(tag, "auto") {
		return "auto", true
	}
	if !languageRE.MatchString(tag) {
		return "", false
	}
	parts := strings.Split(tag, "-")
	parts[0] = strings.ToLower(parts[0])
	for i := 1; i < len(parts); i++ {
		switch p := parts[i]; len(p) {
		case 4:
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		default:
			parts[i] = strings.ToUpper(p)
		}
	}
	return strings.Join(parts, "-"), true
}

func checkLanguage(tag string) (string, error) {
	c, ok := CanonicalLanguage(tag)
	if !ok {
		return "", httpx.BadRequest("language", "language %q is not a BCP-47 tag such as en, en-US, pt-BR, or auto", tag)
	}
	return c, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
