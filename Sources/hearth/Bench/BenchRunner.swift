/// `hearth bench SCENARIO`: loads the key space when the scenario needs it (pipelined sets, not
/// measured), runs the measured phase, and reports throughput, latency percentiles, errors, and the
/// daemon's CPU and memory when it runs on this machine.
///
/// Exit codes: 0 when every measured request succeeded; 1 when some got error responses or went
/// unanswered; 2 for usage errors; 3 when connecting failed (a refused hello included) or the daemon closed
/// connections.
enum BenchRunner {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        let options = try BenchOptions(args)
        if options.rate != nil, ["listen", "departments", "callrecords"].contains(options.scenario) {
            throw UsageError("--rate: bench \(options.scenario) runs closed-loop only, with --pipeline requests in flight per connection")
        }
        if options.scenario == "listen" { return try ListenBench.run(options) }
        if options.scenario == "timeline" { return try TimelineBench.run(options) }
        if options.scenario == "departments" { return try DepartmentsBench.run(options) }
        if options.scenario == "callrecords" { return try CallRecordsBench.run(options) }
        let spec = ScenarioTable.find(options.scenario)!
        let serverPID = options.serverPID ?? (BenchOptions.isLoopback(options.host) ? ProcStats.listeningPID(port: options.port) : nil)
        let progress = Console.isTerminal(2)
        var report = BenchReport(options: options, serverPID: serverPID)

        if spec.loadsKeys && !options.skipLoad {
            let docs = options.documents
            let plan = PhasePlan(connections: min(options.connections, 16), pipeline: 64, threads: 1, warmup: 0,
                                 duration: 600, requests: options.keys, showProgress: progress, label: "loading \(docs.keys) keys",
                                 countWord: "written", serverPID: nil, make: { _ in LoadScenario(docs) })
            let load = try BenchPhase.run(options, plan)
            report.load = load
            let failed = load.result.errors.values.reduce(0, +) + load.result.unanswered
            if failed > 0 || load.result.failure != nil {
                Console.error("error: loading the key space failed: \(describe(load.result))")
                return load.result.failure != nil ? ExitCode.connection : ExitCode.serverError
            }
            if !options.json {
                Console.error("loaded \(NumberText.grouped(options.keys)) documents of \(options.docSize) bytes in \(NumberText.fixed(load.elapsed, 2)) s")
            }
        }

        let plan = PhasePlan(connections: options.connections, pipeline: options.pipeline, threads: options.threads,
                             warmup: options.warmup, duration: options.duration, requests: options.requests,
                             showProgress: progress, label: "bench \(options.scenario)", serverPID: serverPID, make: spec.make)
        report.main = try BenchPhase.run(options, plan)
        Console.line(options.json ? report.json() : report.text())
        let r = report.main.result
        if r.lostConnections > 0 { return ExitCode.connection }
        return r.errors.isEmpty && r.unanswered == 0 ? ExitCode.ok : ExitCode.serverError
    }

    static func describe(_ r: WorkerResult) -> String {
        var parts = r.errors.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }
        if r.unanswered > 0 { parts.append("\(r.unanswered) unanswered") }
        if r.warmupErrors > 0 { parts.append("\(NumberText.grouped(r.warmupErrors)) more during the warmup (not measured)") }
        if let f = r.failure { parts.append(f) }
        return parts.joined(separator: ", ")
    }
}
