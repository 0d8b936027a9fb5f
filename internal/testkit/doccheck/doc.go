// Package doccheck finds the JSON examples of Weft's Markdown documents
// and the marker that says what each one shows, so a test can hold every
// example to the real encoder, so no example can show a field name the
// wire never carries.
//
// Every fenced block whose info string starts with "json", and every
// "http" block whose message has a JSON body (the body is the example),
// must follow a marker, on the nearest non-blank line above its opening
// fence:
//
//	<!-- type: api.ErrorBody -->
//	<!-- example: free (why it has no Go type) -->
//
// A type marker names a Go type of the doc-check test's registry. A free
// example is only held to be JSON. A block without a marker is an error,
// so a new example cannot escape the check.
//
// In an example, a string holding "…" stands for a value of the field's
// type (it is read as null), and a member whose key is "…" stands for
// members left out.
package doccheck
