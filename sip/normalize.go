package sip

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// rfc2543Branch marks the branch the gate gives a request whose top Via
// has none (RFC 2543 peers, RFC 4475 inv2543), so that the transaction
// layer can key it; responses drop it again (stripSyntheticBranch).
const rfc2543Branch = sip.RFC3261BranchMagicCookie + "-sb2543-"

// normalizeRequest repairs, in place, what the parser keeps of a valid
// but unusual request that sipgo's transaction layer would otherwise
// refuse: whitespace around the names and values of From, To and Via
// parameters (RFC 3261 allows LWS around "=", RFC 4475 wsinv), and a top
// Via without an RFC 3261 branch from a peer that sent no From tag
// either (RFC 2543, RFC 4475 inv2543). It reports whether it changed
// anything (the message must then be serialized again).
func normalizeRequest(req *sip.Request) bool {
	changed := false
	trim := func(p sip.HeaderParams) {
		for i, kv := range p {
			k, v := strings.TrimSpace(kv.K), strings.TrimSpace(kv.V)
			if strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) && len(v) >= 2 && k != "" && strings.TrimSpace(v[1:len(v)-1]) != v[1:len(v)-1] {
				v = strings.TrimSpace(v[1 : len(v)-1])
			}
			if k != kv.K || v != kv.V {
				p[i] = sip.HeaderKV{K: k, V: v}
				changed = true
			}
		}
	}
	if f := req.From(); f != nil {
		trim(f.Params)
	}
	if t := req.To(); t != nil {
		trim(t.Params)
	}
	for _, h := range req.GetHeaders("Via") {
		if v, ok := h.(*sip.ViaHeader); ok {
			trim(v.Params)
		}
	}
	top := req.Via()
	if top == nil {
		return changed
	}
	branch, _ := top.Params.Get("branch")
	_, fromTag := req.From().Params.Get("tag")
	if !strings.HasPrefix(branch, sip.RFC3261BranchMagicCookie) && !fromTag {
		// RFC 3261 section 17.2.3 matches such a request by Request-URI,
		// From, Call-ID, CSeq and top Via: hash them into the key.
		sum := sha256.Sum256([]byte(req.Recipient.String() + "\x00" + req.From().Value() + "\x00" + req.CallID().Value() + "\x00" +
			strconv.FormatUint(uint64(req.CSeq().SeqNo), 10) + "\x00" + top.SentBy() + "\x00" + branch))
		top.Params.Add("branch", rfc2543Branch+hex.EncodeToString(sum[:8]))
		changed = true
	}
	return changed
}

// stripSyntheticBranch takes the branch normalizeRequest made up out of
// the response's top Via: the peer sent none.
func stripSyntheticBranch(res *sip.Response) {
	if v := res.Via(); v != nil {
		if b, ok := v.Params.Get("branch"); ok && strings.HasPrefix(b, rfc2543Branch) {
			v.Params.Remove("branch")
		}
	}
}
