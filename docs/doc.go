// Package docs is the project's documentation beyond the README: the
// Markdown pages in this folder. It holds no code; its tests keep the
// documents true to the repository, since a moved file or package leaves no
// compile error behind:
//
//   - every Markdown link of README.md, docs/*.md and k8s/README.md names a
//     file or folder of the repository (and, with a #fragment, a heading of
//     it); no link leaves the repository;
//   - every path of a Go, shell or Markdown file written in backticks names
//     a file that exists;
//   - README.md's package map names every Go package of both modules, and
//     nothing that is not one;
//   - testing.md's fuzz table names every fuzz target with its package.
//
// The tests read files only: they build nothing and start nothing. The
// support matrix and the variable table are checked where they are
// generated (packages node and config).
package docs
