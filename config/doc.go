// Package config is the configuration of every program of the project: one
// declaration of every environment variable (declaration.go: its name,
// default, range or accepted values, one line of help, and which programs
// read it), from which go-envconfig reads the values, the loaders check
// them, and --help, queen-dev -h and docs/operations.md's variable table
// (WriteTable, kept in step by TestREADMEVariables) are written.
//
// It owns: the facade's configuration (Facade, LoadFacade) with every
// boot refusal and its message, the process logger and the boot line
// (NewLogger, ParseLogLevel, Facade.LogBoot); embedded mode's variables
// (Embedded, LoadEmbedded), which queen-dev's supervisor reads; and
// queen-dev's own (Dev, LoadDev). A loader looks up only the variables its
// mode declares, and a bad value is an error naming the variable: the
// programs turn it into a fatal boot.
//
// It must not reach for what the values configure: no listener, Queen
// client, broker or child process, and no package that builds one (node,
// supervisor, queen/dev). Where a value's syntax belongs to another
// package it asks a leaf for it (queen.ParseURL, recordbatch's codec
// names) or leaves it to its owner: queen-dev's token table is parsed by
// queen/dev, the facade binary of embedded mode resolved and checked by
// package supervisor. Nothing here reads the environment but through
// go-envconfig.
package config
