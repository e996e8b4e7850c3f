# The flags of the tests' debug build, sourced by Tests/run-all.sh (its
# build and `swift test`) and Tests/api-break/run.sh (whose SwiftPM run
# builds in the same .build: with other flags it would rebuild the modules).
#
# - The import check fails the build when a target imports a module it
#   does not declare (a lower layer importing a higher one): Package.swift.
# - -gnone: no debug information. A failed expectation names its file and
#   line itself, and a crash's backtrace still names its functions; it
#   saves a tenth of the build's CPU (30 of 360 CPU-seconds on 2 cores).
# - One batch a module: the build already compiles modules side by side,
#   and one batch checks each file's declarations once, not once a batch
#   (20 CPU-seconds more).
# The index store stays: SwiftPM's test discovery on Linux reads it, even
# when every test is Swift Testing's (without it the build fails).
# - -disable-llvm-verify: the compiler does not check its own LLVM IR (a
#   check for compiler bugs, not ours): a seventh of the build's CPU (43 of
#   313 CPU-seconds).
# - .build/tests: make test builds the tests beside the release build, and
#   SwiftPM builds one thing at a time in a folder.
TEST_BUILD=(--scratch-path .build/tests --explicit-target-dependency-import-check error
    -Xswiftc -gnone -Xswiftc -driver-batch-count -Xswiftc 1 -Xswiftc -Xfrontend -Xswiftc -disable-llvm-verify)
