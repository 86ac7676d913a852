// The HearthClient library; see clients/swift/README.md.
