import MockCloudConfig
import MockCloudHTTP

CGIProgram.serve(name: "user-settings", bodyLimit: SettingsRoute.bodyLimit) { request in
    try SettingsRoute(config: ServiceConfig(authorizing: request)).respond(to: request)
}
