// Package ratelog spaces a warning that peers can repeat at will (a
// refused connection, a failing accept, a flood of joins): the first is
// logged, the rest of its window are counted into one more line.
//
// It owns the spacing of one warning and its suppressed count; what is
// logged, at which level and to which logger is the caller's. It imports
// the standard library only.
package ratelog
