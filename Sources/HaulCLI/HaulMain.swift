#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@main
struct HaulMain {
  static func main() async {
    let status = await HaulCommand.run(arguments: Array(CommandLine.arguments.dropFirst()))
    exit(status)
  }
}
