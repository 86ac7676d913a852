/// The `hearth` entry point: picks the subcommand, parses its arguments, maps errors to exit codes
/// (usage 2, connection 3) and prints help.
enum HearthCLI {
    static let version = "0.1.0"

    static func main(_ args: [String]) -> Int32 {
        guard let first = args.first else {
            Console.error(overview)
            Console.error("Error: Missing subcommand.")
            return ExitCode.usage
        }
        switch first {
        case "-h", "--help":
            Console.line(overview)
            return ExitCode.ok
        case "help":
            if args.count > 1 {
                guard let sub = Commands.all.first(where: { $0.name == args[1] }) else { return unknown(args[1]) }
                Console.line(sub.helpText)
            } else {
                Console.line(overview)
            }
            return ExitCode.ok
        case "--version":
            Console.line("hearth \(version)")
            return ExitCode.ok
        default:
            guard let sub = Commands.all.first(where: { $0.name == first }) else { return unknown(first) }
            return run(sub, Array(args.dropFirst()))
        }
    }

    static func run(_ sub: Subcommand, _ args: [String]) -> Int32 {
        do {
            guard let parsed = try parseArguments(args, options: sub.allOptions, positionals: sub.positionals) else {
                Console.line(sub.helpText)
                return ExitCode.ok
            }
            return try sub.run(parsed)
        } catch let error as UsageError {
            Console.error("Error: \(error.message)\nUsage: \(sub.usageLine)\n  See 'hearth \(sub.name) --help' for more information.")
            return ExitCode.usage
        } catch let error as HelloRefused {
            Console.error("error: the daemon refused the hello: \(error)")
            return ExitCode.serverError
        } catch let error as ClientError {
            Console.error("error: \(error)")
            return ExitCode.connection
        } catch {
            Console.error("error: \(error)")
            return ExitCode.serverError
        }
    }

    static func unknown(_ name: String) -> Int32 {
        Console.error("Error: Unknown subcommand '\(name)'.\nUsage: hearth <subcommand> [<options>]\n  See 'hearth --help' for the list of subcommands.")
        return ExitCode.usage
    }

    static var overview: String {
        var text = """
        OVERVIEW: Command-line client and load generator for the Hearth daemon (hearthd).

        USAGE: hearth <subcommand> [<options>]

        Every subcommand that talks to the daemon takes --host and --port (defaults: $HEARTH_HOST and $HEARTH_PORT, else
        127.0.0.1 and 7411; flags win); all take --help.
        Credentials (sent in a hello first on every connection): --token-file FILE or $HEARTH_TOKEN, --admin-key-file FILE
        or $HEARTH_ADMIN_KEY (--token JWT for quick tests).
        Exit codes: 0 ok, 1 server error response (a refused hello too; check: damage found), 2 usage error, 3 connection failure (check: no store).

        SUBCOMMANDS:

        """
        for sub in Commands.all { text += HelpFormat.row(sub.name, sub.abstract) }
        text += "\n  See 'hearth help <subcommand>' for detailed help."
        return text
    }
}
