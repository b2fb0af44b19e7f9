//! GripMock's `faker.*` template functions: plausible random people, places, companies, text,
//! dates and numbers, from small word lists (enough for mock replies, not a data generator).

use std::borrow::Cow;

use super::value::Val;

const FIRST: &[&str] = &[
    "Alice", "Bob", "Carol", "David", "Eve", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory",
    "Oscar", "Peggy", "Trent", "Victor", "Walter",
];
const LAST: &[&str] = &[
    "Smith", "Johnson", "Garcia", "Miller", "Davis", "Martinez", "Lopez", "Wilson", "Anderson",
    "Taylor", "Moore", "Jackson", "Martin", "Lee",
];
const WORDS: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "labore",
    "magna",
    "aliqua",
];
const COUNTRIES: &[(&str, &str)] = &[
    ("United States", "US"),
    ("Germany", "DE"),
    ("France", "FR"),
    ("Japan", "JP"),
    ("Brazil", "BR"),
    ("Canada", "CA"),
    ("India", "IN"),
    ("Spain", "ES"),
];
const CITIES: &[&str] = &[
    "Springfield",
    "Riverside",
    "Fairview",
    "Madison",
    "Georgetown",
    "Clinton",
    "Salem",
    "Franklin",
];
const STATES: &[(&str, &str)] = &[
    ("California", "CA"),
    ("Texas", "TX"),
    ("New York", "NY"),
    ("Oregon", "OR"),
    ("Ohio", "OH"),
    ("Florida", "FL"),
];
const STREETS: &[&str] = &[
    "Main St",
    "Oak Ave",
    "Pine Rd",
    "Maple Dr",
    "Cedar Ln",
    "Elm St",
    "Lake View Blvd",
];
const ZONES: &[&str] = &[
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "America/Sao_Paulo",
];
const COMPANIES: &[&str] = &[
    "Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka",
];
const SUFFIXES: &[&str] = &["Inc", "LLC", "Ltd", "Group", "Corp"];
const JOBS: &[&str] = &[
    "Engineer",
    "Manager",
    "Designer",
    "Analyst",
    "Consultant",
    "Developer",
    "Director",
];
const LEVELS: &[&str] = &["Junior", "Senior", "Lead", "Principal", "Staff"];
const DESCRIPTORS: &[&str] = &[
    "Global", "Regional", "Dynamic", "Central", "Direct", "Legacy",
];
const PRODUCTS: &[&str] = &[
    "Chair",
    "Lamp",
    "Keyboard",
    "Backpack",
    "Bottle",
    "Headphones",
    "Notebook",
    "Watch",
];
const CATEGORIES: &[&str] = &[
    "Home",
    "Electronics",
    "Sports",
    "Books",
    "Garden",
    "Toys",
    "Clothing",
];
const CURRENCIES: &[(&str, &str)] = &[
    ("US Dollar", "USD"),
    ("Euro", "EUR"),
    ("Japanese Yen", "JPY"),
    ("British Pound", "GBP"),
];
const AGENTS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)",
    "curl/8.5.0",
    "grpc-go/1.64.0",
];
const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH"];
const TLDS: &[&str] = &["com", "net", "org", "io", "dev"];
const DAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const NAMES: &[&str] = &[
    "faker.Person.FirstName",
    "faker.Person.LastName",
    "faker.Person.Name",
    "faker.Person.Prefix",
    "faker.Person.Suffix",
    "faker.Person.Gender",
    "faker.Person.Age",
    "faker.Contact.Email",
    "faker.Contact.Phone",
    "faker.Contact.Username",
    "faker.Contact.URL",
    "faker.Geo.Country",
    "faker.Geo.CountryCode",
    "faker.Geo.City",
    "faker.Geo.State",
    "faker.Geo.StateCode",
    "faker.Geo.Zip",
    "faker.Geo.Street",
    "faker.Geo.Latitude",
    "faker.Geo.Longitude",
    "faker.Geo.TimeZone",
    "faker.Network.DomainName",
    "faker.Network.DomainSuffix",
    "faker.Network.IPv4",
    "faker.Network.IPv6",
    "faker.Network.MAC",
    "faker.Network.UserAgent",
    "faker.Network.HTTPMethod",
    "faker.Network.HTTPStatusCode",
    "faker.Company.Company",
    "faker.Company.CompanySuffix",
    "faker.Company.JobTitle",
    "faker.Company.JobLevel",
    "faker.Company.JobDescriptor",
    "faker.Commerce.ProductName",
    "faker.Commerce.ProductCategory",
    "faker.Commerce.ProductDescription",
    "faker.Commerce.CurrencyLong",
    "faker.Commerce.CurrencyShort",
    "faker.Commerce.Price",
    "faker.Text.Word",
    "faker.Text.Sentence",
    "faker.Text.Paragraph",
    "faker.Text.Phrase",
    "faker.Text.Quote",
    "faker.Text.Question",
    "faker.DateTime.Date",
    "faker.DateTime.PastDate",
    "faker.DateTime.FutureDate",
    "faker.DateTime.Year",
    "faker.DateTime.Month",
    "faker.DateTime.Day",
    "faker.DateTime.Hour",
    "faker.DateTime.Minute",
    "faker.DateTime.Second",
    "faker.DateTime.WeekDay",
    "faker.Number.Int",
    "faker.Number.IntN",
    "faker.Number.IntRange",
    "faker.Number.Int32",
    "faker.Number.Int64",
    "faker.Number.Float32",
    "faker.Number.Float32Range",
    "faker.Number.Float64",
    "faker.Number.Float64Range",
    "faker.Identity.UUID",
    "faker.Identity.SSN",
    "faker.Identity.EIN",
];

/// Whether `name` is a faker function.
pub(crate) fn exists(name: &str) -> bool {
    NAMES.contains(&name)
}

fn pick<T: Copy>(list: &[T]) -> T {
    list[fastrand::usize(..list.len())]
}

fn words(n: usize) -> String {
    (0..n.max(1))
        .map(|_| pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

fn sentence(n: usize) -> String {
    let mut s = words(n);
    if let Some(first) = s.get(..1) {
        s = first.to_uppercase() + &s[1..];
    }
    s + "."
}

fn str<'a>(s: impl Into<String>) -> Val<'a> {
    Val::Str(Cow::Owned(s.into()))
}

/// Calls faker function `name`.
pub(crate) fn call<'a>(name: &str, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let int = |i: usize, d: i64| args.get(i).and_then(Val::int).unwrap_or(d);
    let num = |i: usize, d: f64| args.get(i).and_then(Val::num).unwrap_or(d);
    let day = 86_400_000_000_000i64;
    let now = super::clock::now_nanos();
    let (first, last) = (pick(FIRST), pick(LAST));
    Ok(match name.trim_start_matches("faker.") {
        "Person.FirstName" => str(first),
        "Person.LastName" => str(last),
        "Person.Name" => str(format!("{first} {last}")),
        "Person.Prefix" => str(pick(&["Mr.", "Ms.", "Dr.", "Mrs."])),
        "Person.Suffix" => str(pick(&["Jr.", "Sr.", "III", "PhD"])),
        "Person.Gender" => str(pick(&["male", "female"])),
        "Person.Age" => Val::Int(fastrand::i64(18..90)),
        "Contact.Email" => str(format!(
            "{}.{}@example.{}",
            first.to_lowercase(),
            last.to_lowercase(),
            pick(TLDS)
        )),
        "Contact.Phone" => str(format!(
            "+1-{:03}-{:03}-{:04}",
            fastrand::u16(200..999),
            fastrand::u16(100..999),
            fastrand::u16(0..9999)
        )),
        "Contact.Username" => str(format!("{}{}", first.to_lowercase(), fastrand::u16(1..999))),
        "Contact.URL" => str(format!(
            "https://www.{}.{}",
            pick(COMPANIES).to_lowercase(),
            pick(TLDS)
        )),
        "Geo.Country" => str(pick(COUNTRIES).0),
        "Geo.CountryCode" => str(pick(COUNTRIES).1),
        "Geo.City" => str(pick(CITIES)),
        "Geo.State" => str(pick(STATES).0),
        "Geo.StateCode" => str(pick(STATES).1),
        "Geo.Zip" => str(format!("{:05}", fastrand::u32(10000..99999))),
        "Geo.Street" => str(format!("{} {}", fastrand::u16(1..9999), pick(STREETS))),
        "Geo.Latitude" => Val::Float(fastrand::f64() * 180.0 - 90.0),
        "Geo.Longitude" => Val::Float(fastrand::f64() * 360.0 - 180.0),
        "Geo.TimeZone" => str(pick(ZONES)),
        "Network.DomainName" => str(format!("{}.{}", pick(COMPANIES).to_lowercase(), pick(TLDS))),
        "Network.DomainSuffix" => str(pick(TLDS)),
        "Network.IPv4" => str(format!(
            "{}.{}.{}.{}",
            fastrand::u8(1..255),
            fastrand::u8(..),
            fastrand::u8(..),
            fastrand::u8(1..255)
        )),
        "Network.IPv6" => str((0..8)
            .map(|_| format!("{:x}", fastrand::u16(..)))
            .collect::<Vec<_>>()
            .join(":")),
        "Network.MAC" => str((0..6)
            .map(|_| format!("{:02x}", fastrand::u8(..)))
            .collect::<Vec<_>>()
            .join(":")),
        "Network.UserAgent" => str(pick(AGENTS)),
        "Network.HTTPMethod" => str(pick(METHODS)),
        "Network.HTTPStatusCode" => {
            Val::Int(pick(&[200, 201, 204, 301, 400, 401, 403, 404, 500, 503]))
        }
        "Company.Company" => str(format!("{} {}", pick(COMPANIES), pick(SUFFIXES))),
        "Company.CompanySuffix" => str(pick(SUFFIXES)),
        "Company.JobTitle" => str(format!("{} {}", pick(LEVELS), pick(JOBS))),
        "Company.JobLevel" => str(pick(LEVELS)),
        "Company.JobDescriptor" => str(pick(DESCRIPTORS)),
        "Commerce.ProductName" => str(format!("{} {}", pick(DESCRIPTORS), pick(PRODUCTS))),
        "Commerce.ProductCategory" => str(pick(CATEGORIES)),
        "Commerce.ProductDescription" => str(sentence(10)),
        "Commerce.CurrencyLong" => str(pick(CURRENCIES).0),
        "Commerce.CurrencyShort" => str(pick(CURRENCIES).1),
        "Commerce.Price" => {
            let (lo, hi) = (num(0, 1.0), num(1, 1000.0));
            Val::Float(((lo + fastrand::f64() * (hi - lo).max(0.0)) * 100.0).round() / 100.0)
        }
        "Text.Word" => str(pick(WORDS)),
        "Text.Sentence" => str(sentence(int(0, 8).max(1) as usize)),
        "Text.Paragraph" => str((0..int(0, 3).max(1))
            .map(|_| sentence(8))
            .collect::<Vec<_>>()
            .join(" ")),
        "Text.Phrase" => str(words(4)),
        "Text.Quote" => str(format!("\"{}\"", sentence(6))),
        "Text.Question" => str(sentence(6).trim_end_matches('.').to_owned() + "?"),
        "DateTime.Date" => Val::Time(now - fastrand::i64(0..3650) * day),
        "DateTime.PastDate" => Val::Time(now - fastrand::i64(1..365) * day),
        "DateTime.FutureDate" => Val::Time(now + fastrand::i64(1..365) * day),
        "DateTime.Year" => Val::Int(fastrand::i64(1970..2030)),
        "DateTime.Month" => Val::Int(fastrand::i64(1..=12)),
        "DateTime.Day" => Val::Int(fastrand::i64(1..=28)),
        "DateTime.Hour" => Val::Int(fastrand::i64(0..24)),
        "DateTime.Minute" | "DateTime.Second" => Val::Int(fastrand::i64(0..60)),
        "DateTime.WeekDay" => str(pick(DAYS)),
        "Number.Int" | "Number.Int64" => Val::Int(fastrand::i64(0..i64::MAX)),
        "Number.Int32" => Val::Int(i64::from(fastrand::i32(0..i32::MAX))),
        "Number.IntN" => Val::Int(fastrand::i64(0..int(0, 100).max(1))),
        "Number.IntRange" => {
            let (lo, hi) = (int(0, 0), int(1, 100));
            Val::Int(if hi > lo { fastrand::i64(lo..=hi) } else { lo })
        }
        "Number.Float32" | "Number.Float64" => Val::Float(fastrand::f64()),
        "Number.Float32Range" | "Number.Float64Range" => {
            let (lo, hi) = (num(0, 0.0), num(1, 1.0));
            Val::Float(lo + fastrand::f64() * (hi - lo).max(0.0))
        }
        "Identity.UUID" => str(uuid::Uuid::new_v4().to_string()),
        "Identity.SSN" => str(format!(
            "{:03}-{:02}-{:04}",
            fastrand::u16(100..899),
            fastrand::u8(10..99),
            fastrand::u16(1000..9999)
        )),
        "Identity.EIN" => str(format!(
            "{:02}-{:07}",
            fastrand::u8(10..99),
            fastrand::u32(1_000_000..9_999_999)
        )),
        other => return Err(format!("faker.{other} is not a faker function")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_answers() {
        for name in NAMES {
            let v = call(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!v.text().is_empty(), "{name}");
        }
        let n = call("faker.Number.IntRange", &[Val::Int(5), Val::Int(5)]).unwrap();
        assert_eq!(n.text(), "5");
    }
}
