// Package budget is the facade's fair bound on bytes held at once: Budget,
// a weighted semaphore with first-come order within an owner and turns
// across owners. One type serves every memory the facade bounds (the record
// codec's decode budget, request frames and connection read-ahead, fetch
// response memory, Queen answers), so that each is fair the same way and
// reported the same way.
//
// It owns the semaphore only: what a byte is spent on, how large each budget
// is and who counts as an owner are its callers'. It is a leaf: it imports
// the standard library only, never a package of the project.
package budget
