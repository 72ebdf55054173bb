// The HTML report of a profile: one self-contained page (inline CSS, JavaScript and
// SVG; nothing fetched from the network) that draws each device's timeline, the
// summary table and a roofline plot of each kernel against its HCD's peak compute
// rate and memory bandwidths.
//
// The profile travels in the page as JSON and the page's script draws everything from
// it; as it draws, the script lists each kernel it rendered in #rendered-kernels (one
// `li.rendered-kernel` per device and kernel), which is what the headless-browser test
// checks: the names are there only if the script ran.
#pragma once

#include "profile/ProfileEvent.h"

#include <string>
#include <vector>

namespace unitile::profile {

std::string html_report(const std::vector<ProfiledDevice>& devices,
                        const std::vector<ProfileEvent>& events);

} // namespace unitile::profile
