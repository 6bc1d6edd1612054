// `import Haul` brings HaulCore's public types (errors, options, events, checksums) along.
@_exported import HaulCore
