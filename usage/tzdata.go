package usage

// The time zone database is embedded so that requests in any IANA zone
// work on hosts (containers) without /usr/share/zoneinfo.
import _ "time/tzdata"
