// Package jsontext holds the JSON string rules of every JSON text the facade
// exchanges with Queen: how a string is written (AppendString, the reference
// facade's minimal escaping) and how one is passed and checked when read
// (ScanString, SkipSpace, PlainASCII), and how any one value is passed and
// checked by those rules without being decoded (SkipValue: the dev broker's
// request scanners and the transaction stage's reader slice values out of
// a body with it). The Queen client's bodies and answer decoders, the dev
// broker's scanners and answers, and the payload envelope all use it, so
// that one rule governs a string wherever it is written or read.
//
// It owns strings, white space and the JSON grammar of a value only: no
// object, route or envelope shape (those are their packages'). It is a
// leaf: it imports the standard library only, never a package of the
// project.
package jsontext
