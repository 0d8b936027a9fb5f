// Package openapitest holds a hand-kept OpenAPI 3.1 document, as a
// service serves it, to the checks that concern the document alone, so
// every service's document gets the same ones:
//
//   - served: the bytes served are the file's, and the file is JSON
//     pretty-printed with a 2-space indent and a final newline;
//   - version: "openapi" is "3.1.0";
//   - refs: every $ref is a string that points into #/components/ and
//     resolves there;
//   - examples: every example (a media type's or a parameter's example
//     and examples, a schema's examples) is valid against its schema,
//     formats asserted, with JSON Schema draft 2020-12;
//   - components: every component is reachable from the paths through
//     $refs (a security scheme: named by a security requirement), and no
//     object uses the OpenAPI 3.0 keyword nullable;
//   - operations: the document names a server; every operation has an
//     operationId, unique in the document, a summary and a description,
//     and tags the document defines (each defined tag has a description
//     and is used); every operation that needs a key (its security, or
//     else the document's, is not empty) documents a 401.
//
// Check runs them all as subtests. What a document says of the service's
// routes (the routes registered, the statuses and bodies of live answers)
// stays in the service's tests, which use Doc's lookups and Schema to
// read the document and validate answers against it.
package openapitest
