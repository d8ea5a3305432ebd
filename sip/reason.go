package sip

// reasonPhrases are the reason phrases of the final error statuses of
// RFC 3261 section 21 and the RFCs that added statuses since (3329, 3903,
// 4028, 4412, 4474, 5079, 5360, 5393, 6086, 8224, 8599, 8688).
var reasonPhrases = map[int]string{
	300: "Multiple Choices", 301: "Moved Permanently", 302: "Moved Temporarily", 305: "Use Proxy", 380: "Alternative Service",
	400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
	405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout",
	410: "Gone", 412: "Conditional Request Failed", 413: "Request Entity Too Large", 414: "Request-URI Too Long",
	415: "Unsupported Media Type", 416: "Unsupported URI Scheme", 417: "Unknown Resource-Priority", 420: "Bad Extension",
	421: "Extension Required", 422: "Session Interval Too Small", 423: "Interval Too Brief", 424: "Bad Location Information",
	428: "Use Identity Header", 429: "Provide Referrer Identity", 433: "Anonymity Disallowed", 436: "Bad Identity-Info",
	437: "Unsupported Certificate", 438: "Invalid Identity Header", 439: "First Hop Lacks Outbound Support",
	440: "Max-Breadth Exceeded", 469: "Bad Info Package", 470: "Consent Needed",
	480: "Temporarily Unavailable", 481: "Call/Transaction Does Not Exist", 482: "Loop Detected", 483: "Too Many Hops",
	484: "Address Incomplete", 485: "Ambiguous", 486: "Busy Here", 487: "Request Terminated", 488: "Not Acceptable Here",
	489: "Bad Event", 491: "Request Pending", 493: "Undecipherable", 494: "Security Agreement Required",
	500: "Server Internal Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
	504: "Server Time-out", 505: "Version Not Supported", 513: "Message Too Large", 555: "Push Notification Service Not Supported",
	580: "Precondition Failure",
	600: "Busy Everywhere", 603: "Decline", 604: "Does Not Exist Anywhere", 606: "Not Acceptable", 607: "Unwanted", 608: "Rejected",
}

// ReasonPhrase is the reason phrase of a SIP status: the one its RFC
// gives, else the class's ("Client Error", …), as RFC 3261 section 8.1.3.2
// treats an unknown status as the x00 of its class.
func ReasonPhrase(status int) string {
	if r, ok := reasonPhrases[status]; ok {
		return r
	}
	switch status / 100 {
	case 3:
		return "Redirection"
	case 4:
		return "Client Error"
	case 5:
		return "Server Error"
	case 6:
		return "Global Failure"
	}
	return "Unknown"
}
