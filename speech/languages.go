package speech

import "strings"

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
