//! REST routes of the built-in services, as `google.api.http` rules given in code (the seed protos
//! stay as the seeds wrote them, so that their ghz commands compile them unchanged).

use volley_server::pb::google_api::{HttpRule, http_rule::Pattern};

fn rule(pattern: Pattern, body: &str) -> HttpRule {
    HttpRule {
        pattern: Some(pattern),
        body: body.to_owned(),
        ..HttpRule::default()
    }
}

/// `(method, rule)` pairs for `ServerBuilder::http_rule`.
pub fn http_rules() -> Vec<(&'static str, HttpRule)> {
    let mut hello = rule(Pattern::Post("/v1/greeter/hello".into()), "*");
    hello.additional_bindings = vec![rule(Pattern::Get("/v1/greeter/hello/{name}".into()), "")];
    vec![
        (
            "api.Users.Get",
            rule(Pattern::Get("/v1/users/{id}".into()), ""),
        ),
        ("api.Users.List", rule(Pattern::Get("/v1/users".into()), "")),
        ("helloworld.Greeter.SayHello", hello),
        (
            "grpc.hi.sayHello",
            rule(Pattern::Post("/v1/hi".into()), "*"),
        ),
        (
            "orders.OrderService.AddOrderUnary",
            rule(Pattern::Post("/v1/orders".into()), "*"),
        ),
    ]
}
