// hearth: the command-line client, interactive shell and load generator for hearthd. See docs/clients.md.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let status = HearthCLI.main(Array(CommandLine.arguments.dropFirst()))
Console.flush()
exit(status)
