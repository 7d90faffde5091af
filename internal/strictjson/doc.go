// Package strictjson writes and reads the JSON of Braid's stored records
// (messages, interrupt state, pending work, an agent's data) without
// reflection.
//
// The writers produce exactly what encoding/json writes with HTML escaping
// off (SetEscapeHTML(false), no trailing newline): strings escaped the same
// way (control characters, '"', '\\', U+2028 and U+2029; invalid UTF-8 as
// U+FFFD), raw values compacted and checked, nil raw values as null, so
// records keep their stored form whichever encoder wrote them.
//
// The Reader walks one JSON text strictly: every value is checked as
// encoding/json checks it (json.Valid), strings are unescaped as
// encoding/json unescapes them (invalid UTF-8 and lone surrogates become
// U+FFFD), and the type decoders built on it reject unknown, missing,
// repeated and mistyped keys themselves. It never panics on any input.
package strictjson
