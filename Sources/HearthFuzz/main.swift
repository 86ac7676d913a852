// hearth-fuzz: fuzz targets for the parsers and the recovery path.
//
//   hearth-fuzz TARGET [libFuzzer flags] [CORPUS_DIR...]   built with -sanitize=fuzzer (`make fuzz`)
//   hearth-fuzz TARGET FILE_OR_DIR...                      a plain build replays the inputs once
//
// Targets: framer, request, value, query, recovery (see FuzzTarget.swift). A failed invariant traps, which
// libFuzzer reports as a crash and saves the input; saved inputs live in Tests/Fuzz/<target>/ and
// `make test` replays them all.
#if canImport(Glibc)
import Glibc
#endif
import CFuzzShim

let arguments = CommandLine.arguments
guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
    FileIO.write(2, "usage: hearth-fuzz \(names) [libFuzzer flags] [corpus dirs or input files]\n")
    exit(2)
}
FuzzTarget.current = target

if hearth_fuzz_linked() != 0 {
    // libFuzzer takes argv[0] and its own flags; drop the target name.
    var args = [arguments[0]] + arguments.dropFirst(2)
    var cargs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    var argc = Int32(args.count)
    let rc = cargs.withUnsafeMutableBufferPointer { buf -> Int32 in
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buf.baseAddress
        return hearth_fuzz_run(&argc, &argv) { data, size in
            FuzzTarget.current.run(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
    args.removeAll()
    exit(rc)
} else {
    var replayed = 0
    for path in arguments.dropFirst(2) {
        for file in FileIO.files(under: path) {
            let bytes = FileIO.read(file)
            bytes.withUnsafeBytes { target.run($0) }
            replayed += 1
        }
    }
    print("hearth-fuzz \(target.rawValue): \(replayed) passed, 0 failed")
}
