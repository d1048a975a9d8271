/**
 * The zero time on the wire: Go's `time.Time{}` in RFC 3339, what a never-set timestamp reads as
 * (a session never touched, a price list never refreshed, a queue time not known). Defined once.
 */
export const ZERO_TIME = "0001-01-01T00:00:00Z";
