import Foundation
import HearthTesting
import Testing

/// Every input under Tests/Fuzz (the seed corpus and each input a fuzzer once crashed on) replayed through
/// its fuzz target, built without libFuzzer: `hearth-fuzz TARGET DIR` runs each file once and traps on a
/// broken invariant.
@Suite struct FuzzRegressionTests {
    static let targets = ["framer", "request", "value", "query", "recovery"]

    @Test(arguments: targets)
    func everyKeptInputStillPasses(_ target: String) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let dir = root.appendingPathComponent("Fuzz/\(target)").path
        let inputs = try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".") }
        #expect(!inputs.isEmpty, "no inputs kept for \(target)")
        let binary = URL(fileURLWithPath: DaemonProcess.binaryPath()).deletingLastPathComponent().appendingPathComponent("hearth-fuzz").path
        let run = try CLIProcess.run([target, dir], timeout: 300, binary: binary)
        #expect(run.status == 0, "hearth-fuzz \(target) failed:\n\(run.stderr.suffix(2000))")
        #expect(run.stdout.contains("\(inputs.count) passed, 0 failed"), "\(run.stdout)")
    }
}
