package sip

import (
	"fmt"
	"strings"
)

// defaultOfferOrder is the order of our own offers (a placed call's
// INVITE, the 200 OK or reliable 180 answering an INVITE without SDP)
// when the number names no codecs: the order in which an offer received
// is negotiated, best first.
var defaultOfferOrder = []Codec{Opus, G722, PCMU, PCMA}

// offerCodecs are the codecs of our own offer for a number whose codec
// preference is prefs (names from CodecNames, best first; empty: the
// default order). Names it does not know are refused, so a bad setting
// says so rather than offering less than it meant.
func offerCodecs(prefs []string) ([]Codec, error) {
	if len(prefs) == 0 {
		return defaultOfferOrder, nil
	}
	out := make([]Codec, 0, len(prefs))
	for _, n := range prefs {
		c, ok := codecNamed(n)
		if !ok {
			return nil, fmt.Errorf("%w: codec %q is not one of %v", errNoCommonCodec, n, CodecNames)
		}
		out = append(out, c)
	}
	return out, nil
}

// codecNamed is the codec of a name from CodecNames (any case).
func codecNamed(name string) (Codec, bool) {
	for _, c := range defaultOfferOrder {
		if strings.EqualFold(name, c.Name) {
			return c, true
		}
	}
	return Codec{}, false
}
