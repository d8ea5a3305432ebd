package speech

import (
	"strings"

	"switchboard/api/httpx"
)

// language is one TTS language of the spec with the espeak-ng voice that
// speaks it.
type language struct {
	code   string // canonical spelling from the spec
	espeak string // espeak-ng language voice
}

// languages is the spec's list (case-insensitive); "auto" speaks English on
// the local engine, which cannot detect a language.
var languages = []language{
	{"auto", "en"}, {"en", "en"},
	{"ar-EG", "ar"}, {"ar-SA", "ar"}, {"ar-AE", "ar"},
	{"bn", "bn"}, {"zh", "cmn"}, {"fr", "fr"}, {"de", "de"}, {"hi", "hi"},
	{"id", "id"}, {"it", "it"}, {"ja", "ja"}, {"ko", "ko"},
	{"pt-BR", "pt-br"}, {"pt-PT", "pt"}, {"ru", "ru"},
	{"es-MX", "es-419"}, {"es-ES", "es"}, {"tr", "tr"}, {"vi", "vi"},
}

// Languages lists the language codes POST /v1/tts accepts, in the spec's
// spelling.
func Languages() []string {
	out := make([]string, len(languages))
	for i, l := range languages {
		out[i] = l.code
	}
	return out
}

// lookupLanguage returns the canonical entry for code, case-insensitively.
// A BCP-47 tag that is not in the list as such (en-US, fr-CA, zh-Hans-CN,
// en_GB) is read by its primary language subtag: the first entry of that
// language (en-US speaks en, pt speaks pt-BR).
func lookupLanguage(code string) (language, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), "_", "-")
	for _, l := range languages {
		if strings.EqualFold(l.code, code) {
			return l, true
		}
	}
	primary, _, _ := strings.Cut(code, "-")
	if len(primary) < 2 || len(primary) > 3 {
		return language{}, false
	}
	for _, l := range languages {
		p, _, _ := strings.Cut(l.code, "-")
		if l.code != "auto" && strings.EqualFold(p, primary) {
			return l, true
		}
	}
	return language{}, false
}

// language resolves a request's language tag: the spec's list first, then
// the languages the engine speaks beyond it (espeak-ng: every language it
// has a voice for). Anything else is a 400 naming param.
func (s *Service) language(tag, param string) (string, error) {
	if tag == "" {
		return "", httpx.BadRequest(param, "%s is required: a BCP-47 code or auto (%v, or another language the TTS engine speaks)", param, Languages())
	}
	if l, ok := lookupLanguage(tag); ok {
		return l.code, nil
	}
	if code, ok := s.tts.Language(tag); ok {
		return code, nil
	}
	return "", httpx.BadRequest(param, "unknown language %q: neither one of %v (case-insensitive) nor a language the TTS engine speaks (the local engine speaks those espeak-ng --voices lists)", tag, Languages())
}
