// Package architecture holds tests and no code: they keep the repository's
// maps true, the import map in ARCHITECTURE.md and the links between the
// Markdown documents.
//
// TestDiagramMatchesImports reads the fenced block marked "imports" in
// ARCHITECTURE.md (one line a package, "name → what it imports", or a line
// of names that import nothing of ours) and the imports of every non-test
// .go file of the module (parsed with go/parser, whatever its build tags,
// so the Windows and Linux files count alike; no go command is needed,
// since the tests also run as Windows programs under Wine: the source tree
// is found by walking up from the working directory to go.mod). It fails,
// naming each one, on an import arrow the map does not draw, an arrow the
// map draws that no file imports, a package missing from the map or one
// the map names that does not exist, and an arrow pointing up the map: the
// map lists the packages top to bottom, so every arrow must point to a
// later line, which is what "dependencies point one way" means.
//
// Imports in _test.go files do not count: tests reach across the layers on
// purpose (the simulator, the harness, storetest), and the map is of what
// the shipped code depends on.
//
// TestDocLinks checks every relative link of every Markdown file: the file
// exists, and a #fragment into a .md file names one of its headings (as
// GitHub makes the anchors). Every decision is reached from the README
// through docs/decisions.md, one link each; this keeps those links true
// when sections move or are renamed.
package architecture
