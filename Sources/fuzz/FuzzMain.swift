import Foundation
import TributaryFuzz

#if FUZZING
    /// The target libFuzzer drives, named by `TRIBUTARY_FUZZ_TARGET` (see `make fuzz`).
    private let selectedTarget: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["TRIBUTARY_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("set TRIBUTARY_FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        selectedTarget.run(Data(bytes: data, count: size))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    private func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable's `main` to `<module>_main`; here that is libFuzzer's driver.
    @_cdecl("tributary_fuzz_main")
    public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
        var count = argc
        var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
    }
#else
    /// Without libFuzzer: `tributary-fuzz TARGET FILE...` replays inputs (a crash reproduces), and
    /// `tributary-fuzz seeds DIR` writes the seed corpus (`Fuzz/corpus`, committed).
    @main
    struct FuzzCorpusRunner {
        static func main() throws {
            let arguments = Array(CommandLine.arguments.dropFirst())
            if arguments.first == "seeds", arguments.count == 2 {
                try FuzzSeeds.write(into: arguments[1])
                return
            }
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
                let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
                FileHandle.standardError.write(Data("usage: tributary-fuzz (\(names)) FILE... | seeds DIR\n".utf8))
                exit(2)
            }
            for path in arguments.dropFirst() {
                target.run(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            print("replayed \(arguments.count - 1) input(s) through \(name)")
        }
    }
#endif
